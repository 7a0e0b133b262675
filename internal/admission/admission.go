// Package admission judges a RotationPolicy document as the API server
// does on create: the CRD's served version, its OpenAPI schema with its
// defaults, and its CEL rules — the same library code the API server runs
// (k8s.io/apiextensions-apiserver), read from the CRD this project ships.
package admission

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"

	apiextensions "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"

	"github.com/noderotation/node-rotation-controller/config/crd"
)

// version is one served version of the CRD, ready to judge objects.
type version struct {
	structural *structuralschema.Structural
	schema     validation.SchemaValidator
	cel        *cel.Validator
}

type judge struct {
	group, kind string
	versions    map[string]version
}

var load = sync.OnceValues(func() (*judge, error) { return compile(crd.RotationPolicy) })

func compile(raw []byte) (*judge, error) {
	var def apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(raw, &def); err != nil {
		return nil, fmt.Errorf("reading the RotationPolicy CRD: %w", err)
	}
	j := &judge{group: def.Spec.Group, kind: def.Spec.Names.Kind, versions: map[string]version{}}
	for _, v := range def.Spec.Versions {
		if !v.Served || v.Schema == nil {
			continue
		}
		var props apiextensions.JSONSchemaProps
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, &props, nil); err != nil {
			return nil, fmt.Errorf("converting the %s schema: %w", v.Name, err)
		}
		s, err := structuralschema.NewStructural(&props)
		if err != nil {
			return nil, fmt.Errorf("the %s schema is not structural: %w", v.Name, err)
		}
		sv, _, err := validation.NewSchemaValidator(&props)
		if err != nil {
			return nil, fmt.Errorf("the %s schema: %w", v.Name, err)
		}
		j.versions[v.Name] = version{structural: s, schema: sv, cel: cel.NewValidator(s, true, celconfig.PerCallLimit)}
	}
	return j, nil
}

// Admit judges one object (a decoded YAML or JSON document) as a create
// of it would be: it returns the object with the schema's defaults
// applied, or an error in the API server's words — the kind and version
// it does not serve, or each field the schema or a CEL rule refuses.
func Admit(obj map[string]any) (map[string]any, error) {
	j, err := load()
	if err != nil {
		return nil, err
	}
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	group, ver, _ := strings.Cut(apiVersion, "/")
	v, ok := j.versions[ver]
	if group != j.group || kind != j.kind || !ok {
		return nil, fmt.Errorf("no matches for kind %q in version %q: the CRD serves %s", kind, apiVersion, j.served())
	}
	obj, err = asDecoded(obj)
	if err != nil {
		return nil, err
	}
	// kubectl apply asks for strict field validation: a field the schema
	// does not have is refused before anything is judged
	opts := structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}
	unknown := append(unknownMetadata(obj), structuralpruning.PruneWithOptions(obj, v.structural, true, opts)...)
	if len(unknown) > 0 {
		quoted := make([]string, len(unknown))
		for i, u := range unknown {
			quoted[i] = fmt.Sprintf("unknown field %q", u)
		}
		return nil, fmt.Errorf("strict decoding error: %s", strings.Join(quoted, ", "))
	}
	structuraldefaulting.Default(obj, v.structural)
	// the order and the checks of the API server's create strategy
	// (k8s.io/apiextensions-apiserver/pkg/registry/customresource)
	errs := validation.ValidateCustomResource(nil, obj, v.schema)
	errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, v.structural, obj)...)
	if blocking := blockingErr(errs); blocking != nil {
		errs = append(errs, blocking)
	} else {
		celErrs, _ := v.cel.Validate(context.Background(), nil, v.structural, obj, nil, celconfig.RuntimeCELCostBudget)
		errs = append(errs, celErrs...)
	}
	if len(errs) > 0 {
		name := ""
		if md, ok := obj["metadata"].(map[string]any); ok {
			name, _ = md["name"].(string)
		}
		return nil, fmt.Errorf("%s.%s %q is invalid: %w", j.kind, j.group, name, errs.ToAggregate())
	}
	return obj, nil
}

func (j *judge) served() string {
	var out []string
	for v := range j.versions {
		out = append(out, j.group+"/"+v)
	}
	return strings.Join(out, ", ")
}

// blockingErr is the API server's word that its CEL rules were not run:
// an error of these types leaves the object too malformed to judge.
func blockingErr(errs field.ErrorList) *field.Error {
	for _, e := range errs {
		switch e.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation")
		}
	}
	return nil
}

// asDecoded is obj as the API server decodes a request body: through
// JSON, with integers as int64 (a YAML decoder's float64 3 is the
// integer 3 to the schema).
func asDecoded(obj map[string]any) (map[string]any, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding the object: %w", err)
	}
	var out map[string]any
	if err := utiljson.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("decoding the object: %w", err)
	}
	return out, nil
}

// unknownMetadata lists the fields of obj's metadata that ObjectMeta does
// not have, as "metadata.<field>": pruning leaves metadata to the API
// server's own decoding, which refuses them under strict validation.
func unknownMetadata(obj map[string]any) []string {
	md, ok := obj["metadata"].(map[string]any)
	if !ok {
		return nil
	}
	known := map[string]bool{}
	t := reflect.TypeOf(metav1.ObjectMeta{})
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		known[name] = true
	}
	var out []string
	for k := range md {
		if !known[k] {
			out = append(out, "metadata."+k)
		}
	}
	sort.Strings(out)
	return out
}
