package main

import (
	"bufio"
	"errors"
	"flag"
	"io"
	"maps"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

const (
	operationsDoc = "../../docs/operations.md"
	chartValues   = "../../charts/node-rotation-controller/values.yaml"
)

// usage runs the flag parsing with -h and returns what it printed.
func usage(t *testing.T) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	_, perr := parseFlags([]string{"-h"})
	os.Stdout = stdout
	_ = w.Close()
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(perr, flag.ErrHelp) {
		t.Fatalf("-h: %v", perr)
	}
	return string(out)
}

var (
	flagLine    = regexp.MustCompile(`^  -(\S+)(?: (\S+))?$`)
	flagDefault = regexp.MustCompile(`\(default (.+)\)$`)
)

// helpFlags parses the -h output: each flag's default as the user would
// type it (zero values, which -h omits, spelled false, 0 or "").
func helpFlags(t *testing.T, help string) map[string]string {
	t.Helper()
	out := map[string]string{}
	name, typ := "", ""
	flush := func(usageText string) {
		if name == "" {
			return
		}
		def := map[string]string{"": "false", "int": "0", "string": `""`}[typ]
		if m := flagDefault.FindStringSubmatch(strings.TrimSpace(usageText)); m != nil {
			def = m[1]
			if u, err := strconv.Unquote(def); err == nil {
				def = u
			}
		}
		out["-"+name] = def
		name = ""
	}
	for _, line := range strings.Split(help, "\n") {
		if m := flagLine.FindStringSubmatch(line); m != nil {
			name, typ = m[1], m[2]
			continue
		}
		if strings.HasPrefix(line, "    \t") {
			flush(line)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no flags found in -h output:\n%s", help)
	}
	return out
}

// docTable returns the rows of the markdown table between the marker
// comment starting with begin and the one starting with end: the first
// cell (backticks removed) → the second cell.
func docTable(t *testing.T, doc, begin, end string) map[string]string {
	t.Helper()
	f, err := os.Open(doc)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows := map[string]string{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, begin):
			in = true
		case strings.HasPrefix(line, end):
			in = false
		case in && strings.HasPrefix(line, "| `"):
			cells := strings.Split(strings.Trim(line, "|"), " | ")
			if len(cells) < 3 {
				t.Errorf("%s: a row without a default and a description: %s", doc, line)
				continue
			}
			key := strings.Trim(strings.TrimSpace(cells[0]), "`")
			if _, dup := rows[key]; dup {
				t.Errorf("%s: %s documented twice", doc, key)
			}
			rows[key] = strings.Trim(strings.TrimSpace(cells[1]), "`")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		t.Fatalf("%s: no table between %q and %q", doc, begin, end)
	}
	return rows
}

// TestEveryFlagIsDocumented: the flags table of docs/operations.md lists
// exactly the flags -h prints, each with the default -h prints.
func TestEveryFlagIsDocumented(t *testing.T) {
	help := helpFlags(t, usage(t))
	docs := docTable(t, operationsDoc, "<!-- flags-table", "<!-- end flags-table")
	compare(t, "flag", help, docs)
}

func compare(t *testing.T, what string, actual, docs map[string]string) {
	t.Helper()
	for _, k := range sortedKeys(actual) {
		d, ok := docs[k]
		switch {
		case !ok:
			t.Errorf("%s %s (default %s) is not in the table of %s", what, k, actual[k], operationsDoc)
		case d != actual[k] && !(d == `""` && actual[k] == ""):
			t.Errorf("%s %s: %s documents the default %s, the code has %s", what, k, operationsDoc, d, actual[k])
		}
	}
	for _, k := range sortedKeys(docs) {
		if _, ok := actual[k]; !ok {
			t.Errorf("%s documents %s %s, which does not exist", operationsDoc, what, k)
		}
	}
}

// TestEveryChartValueIsDocumented: the values table of docs/operations.md
// names every key of values.yaml (a row for a map covers the keys under
// it), names no key values.yaml lacks, and gives each row's default as
// values.yaml has it.
func TestEveryChartValueIsDocumented(t *testing.T) {
	raw, err := os.ReadFile(chartValues)
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(raw, &values); err != nil {
		t.Fatal(err)
	}
	docs := docTable(t, operationsDoc, "<!-- values-table", "<!-- end values-table")
	for _, leaf := range leaves(values, "") {
		covered := false
		for p := leaf; p != ""; p = parent(p) {
			if _, ok := docs[p]; ok {
				covered = true
				break
			}
		}
		if !covered {
			t.Errorf("chart value %s is not in the values table of %s", leaf, operationsDoc)
		}
	}
	for _, key := range sortedKeys(docs) {
		got, ok := lookup(values, key)
		if !ok {
			t.Errorf("%s documents chart value %s, which values.yaml does not have", operationsDoc, key)
			continue
		}
		var want any
		if err := yaml.Unmarshal([]byte(docs[key]), &want); err != nil {
			t.Errorf("%s: the documented default of %s is not YAML: %v", operationsDoc, key, err)
			continue
		}
		if !reflect.DeepEqual(normalize(got), normalize(want)) {
			t.Errorf("chart value %s: %s documents the default %s, values.yaml has %v", key, operationsDoc, docs[key], got)
		}
	}
}

// leaves are the dotted paths of the scalars (and empty maps) of v.
func leaves(v any, prefix string) []string {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		return []string{prefix}
	}
	var out []string
	for _, k := range sortedKeys(m) {
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		out = append(out, leaves(m[k], p)...)
	}
	return out
}

func parent(p string) string {
	if i := strings.LastIndex(p, "."); i >= 0 {
		return p[:i]
	}
	return ""
}

func lookup(v any, path string) (any, bool) {
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

// normalize makes nil and an empty map compare equal ({} parses as either).
func normalize(v any) any {
	if m, ok := v.(map[string]any); ok {
		if len(m) == 0 {
			return nil
		}
		out := map[string]any{}
		for k, x := range m {
			out[k] = normalize(x)
		}
		return out
	}
	return v
}

// sortedKeys lists a map's keys in order (deterministic messages).
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
