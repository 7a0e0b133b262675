package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/util/jsonpath"

	"github.com/noderotation/node-rotation-controller/internal/inspect"
)

// outputFlags are -o and --no-headers of status and explain, with
// kubectl's spellings: the views' own table, wide, json and yaml (rendered
// by internal/inspect), and name, jsonpath=TEMPLATE and
// custom-columns=SPEC through cli-runtime's and client-go's printers, over
// the same fields -o json shows.
type outputFlags struct {
	format    string
	noHeaders bool
}

func (o *outputFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&o.format, "output", "o", "table", "output format: "+strings.Join(inspect.Formats, ", ")+", name, jsonpath=TEMPLATE, custom-columns=NAME:.field,…")
	cmd.Flags().BoolVar(&o.noHeaders, "no-headers", false, "print no header line in status's table and wide output, and in custom-columns output")
}

// check refuses an unknown format before the cluster is read.
func (o outputFlags) check() error {
	kind, arg, _ := strings.Cut(o.format, "=")
	switch kind {
	case "name":
		return nil
	case "jsonpath", "custom-columns":
		if arg == "" {
			return badInput("-o %s= needs a template, e.g. -o %s", kind, map[string]string{"jsonpath": "jsonpath='{.items[*].nodePool}'", "custom-columns": "custom-columns=POOL:.nodePool,GATE:.gate.name"}[kind])
		}
		if kind == "jsonpath" {
			if _, err := printers.NewJSONPathPrinter(arg); err != nil {
				return badInput("-o jsonpath: %v", err)
			}
		} else if _, err := columnsOf(arg); err != nil {
			return badInput("-o custom-columns: %v", err)
		}
		return nil
	}
	if err := inspect.CheckFormat(o.format); err != nil {
		return badInput("%v (or name, jsonpath=TEMPLATE, custom-columns=SPEC)", err)
	}
	return nil
}

// view is what one command prints: its items (each as -o json shows it)
// with their NodePool or NodeClaim names, the table the view renders
// itself, and whether it is one object (explain) or a list (status).
type view struct {
	header bool // the table's first line is a header (status), not a row (explain)
	items  []any
	kind   string // NodePool or NodeClaim, for -o name
	names  []string
	single bool
	render func(w io.Writer, format string) error
}

func (o outputFlags) print(w io.Writer, v view) error {
	kind, arg, _ := strings.Cut(o.format, "=")
	switch kind {
	case "name":
		p := printers.NamePrinter{}
		for _, n := range v.names {
			u := &unstructured.Unstructured{}
			u.SetAPIVersion("karpenter.sh/v1")
			u.SetKind(v.kind)
			u.SetName(n)
			if err := p.PrintObj(u, w); err != nil {
				return err
			}
		}
		return nil
	case "jsonpath":
		doc, err := v.document()
		if err != nil {
			return err
		}
		p, err := printers.NewJSONPathPrinter(arg)
		if err != nil {
			return badInput("-o jsonpath: %v", err)
		}
		return p.PrintObj(&unstructured.Unstructured{Object: doc}, w)
	case "custom-columns":
		return o.columns(w, v, arg)
	case "table", "wide":
		if !o.noHeaders || !v.header {
			return v.render(w, o.format)
		}
		var buf bytes.Buffer
		if err := v.render(&buf, o.format); err != nil {
			return err
		}
		_, rest, _ := bytes.Cut(buf.Bytes(), []byte("\n"))
		_, err := w.Write(rest)
		return err
	}
	return v.render(w, o.format)
}

// document is what jsonpath reads: the one object of explain, or the rows
// of status as a kubectl List ({.items[*].nodePool}).
func (v view) document() (map[string]any, error) {
	items, err := asMaps(v.items)
	if err != nil {
		return nil, err
	}
	if v.single && len(items) == 1 {
		return items[0], nil
	}
	list := make([]any, len(items))
	for i, m := range items {
		list[i] = m
	}
	return map[string]any{"apiVersion": "v1", "kind": "List", "items": list}, nil
}

func asMaps(items []any) ([]map[string]any, error) {
	out := make([]map[string]any, 0, len(items))
	for _, it := range items {
		b, err := json.Marshal(it)
		if err != nil {
			return nil, fmt.Errorf("encoding the output: %w", err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("encoding the output: %w", err)
		}
		out = append(out, m)
	}
	return out, nil
}

type column struct {
	header string
	path   *jsonpath.JSONPath
}

// columnsOf parses kubectl's custom-columns spec, HEADER:.field,… (a
// field in kubectl's relaxed form, with or without the braces).
func columnsOf(spec string) ([]column, error) {
	var cols []column
	for _, part := range strings.Split(spec, ",") {
		header, expr, ok := strings.Cut(part, ":")
		if !ok || header == "" || expr == "" {
			return nil, fmt.Errorf("%q: want HEADER:.field", part)
		}
		if !strings.HasPrefix(expr, "{") {
			expr = "{" + expr + "}"
		}
		jp := jsonpath.New(header).AllowMissingKeys(true)
		if err := jp.Parse(expr); err != nil {
			return nil, fmt.Errorf("%s: %w", header, err)
		}
		cols = append(cols, column{header: header, path: jp})
	}
	return cols, nil
}

func (o outputFlags) columns(w io.Writer, v view, spec string) error {
	cols, err := columnsOf(spec)
	if err != nil {
		return badInput("-o custom-columns: %v", err)
	}
	items, err := asMaps(v.items)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	if !o.noHeaders {
		headers := make([]string, len(cols))
		for i, c := range cols {
			headers[i] = c.header
		}
		fmt.Fprintln(tw, strings.Join(headers, "\t"))
	}
	for _, it := range items {
		cells := make([]string, len(cols))
		for i, c := range cols {
			var buf bytes.Buffer
			if err := c.path.Execute(&buf, it); err != nil {
				return fmt.Errorf("-o custom-columns %s: %w", c.header, err)
			}
			cells[i] = buf.String()
			if cells[i] == "" {
				cells[i] = "<none>"
			}
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}
