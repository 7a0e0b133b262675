package plan

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/yaml"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/admission"
	"github.com/noderotation/node-rotation-controller/internal/policy"
)

// LoadPolicy reads the RotationPolicy named name from path (any one when the
// file holds a single policy). Errors name the file and the field.
func LoadPolicy(path, name string) (v1alpha1.RotationPolicy, error) {
	all, err := LoadPolicies(path)
	if err != nil {
		return v1alpha1.RotationPolicy{}, err
	}
	var found []v1alpha1.RotationPolicy
	for _, p := range all {
		if name == "" || p.Name == name {
			found = append(found, p)
		}
	}
	switch {
	case len(found) == 1:
		return found[0], nil
	case len(found) == 0 && name != "":
		return v1alpha1.RotationPolicy{}, fmt.Errorf("%s: no RotationPolicy named %q", path, name)
	case len(found) == 0:
		return v1alpha1.RotationPolicy{}, fmt.Errorf("%s: no RotationPolicy in the file", path)
	}
	return v1alpha1.RotationPolicy{}, fmt.Errorf("%s: %d RotationPolicies in the file; choose one with --policy NAME", path, len(found))
}

// LoadPolicies reads every RotationPolicy in path, in file order; other
// kinds are skipped.
func LoadPolicies(path string) ([]v1alpha1.RotationPolicy, error) {
	docs, err := documents(path)
	if err != nil {
		return nil, err
	}
	var out []v1alpha1.RotationPolicy
	for i, doc := range docs {
		p, ok, err := admit(doc)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", path, i+1, err)
		}
		if ok {
			out = append(out, p)
		}
	}
	return out, nil
}

// admit judges a RotationPolicy document as the API server would on
// create — first, so a wrong type reads in its words — then refuses a
// field the API does not have (kubectl apply's strict field validation),
// and returns the policy as stored: with the CRD's defaults (an absent
// minRotationChances reads 2). ok is false for a document of another kind.
func admit(doc []byte) (v1alpha1.RotationPolicy, bool, error) {
	var obj map[string]any
	var p v1alpha1.RotationPolicy
	if err := sigsyaml.Unmarshal(doc, &obj); err != nil {
		return p, false, errors.New(cleanJSONError(err))
	}
	if kind, _ := obj["kind"].(string); kind != "RotationPolicy" {
		return p, false, nil
	}
	defaulted, err := admission.Admit(obj)
	if err != nil {
		return p, false, err
	}
	if err := sigsyaml.UnmarshalStrict(doc, &p); err != nil {
		return p, false, errors.New(cleanJSONError(err))
	}
	raw, err := json.Marshal(defaulted)
	if err != nil {
		return p, false, fmt.Errorf("encoding the admitted policy: %w", err)
	}
	p = v1alpha1.RotationPolicy{}
	if err := json.Unmarshal(raw, &p); err != nil {
		return p, false, fmt.Errorf("decoding the admitted policy: %w", err)
	}
	return p, true, nil
}

// Pool is what the derivation reads from a NodePool's template.
type Pool struct {
	Name             string
	ExpireAfter      *time.Duration // nil = Never
	TerminationGrace *time.Duration // nil = unset
	// EKSAutoMode: the template's nodeClassRef is an EKS Auto Mode
	// NodeClass, whose nodes live 21 days at most.
	EKSAutoMode bool
	// Budgets are spec.disruption.budgets; Karpenter's default when the
	// document sets none (DefaultBudgets).
	Budgets []karpv1.Budget
}

// DefaultBudgets is the budget Karpenter's CRD gives a NodePool that sets
// none: a tenth of its nodes at once. plan assumes it of a pool given
// without a NodePool file.
func DefaultBudgets() []karpv1.Budget { return []karpv1.Budget{{Nodes: "10%"}} }

// LoadNodePool reads a Karpenter NodePool and its template's expireAfter and
// terminationGracePeriod.
func LoadNodePool(path string) (Pool, error) {
	docs, err := documents(path)
	if err != nil {
		return Pool{}, err
	}
	for i, doc := range docs {
		var np karpv1.NodePool
		if err := sigsyaml.Unmarshal(doc, &np); err != nil {
			return Pool{}, fmt.Errorf("%s: document %d: %s", path, i+1, cleanJSONError(err))
		}
		if np.Kind != "NodePool" {
			continue
		}
		spec := np.Spec.Template.Spec
		p := Pool{Name: np.Name, ExpireAfter: spec.ExpireAfter.Duration, EKSAutoMode: policy.EKSAutoMode(spec.NodeClassRef), Budgets: np.Spec.Disruption.Budgets}
		if !budgetsSet(doc) {
			// the CRD's default, as the API server stores the NodePool
			p.Budgets = DefaultBudgets()
		}
		if spec.TerminationGracePeriod != nil {
			tgp := spec.TerminationGracePeriod.Duration
			p.TerminationGrace = &tgp
		}
		if spec.ExpireAfter.Duration == nil && !expireAfterSet(doc) {
			// Karpenter defaults an absent expireAfter to 720h; "Never"
			// decodes to the same nil duration, so only the key tells them
			// apart.
			d := 720 * time.Hour
			p.ExpireAfter = &d
		}
		return p, nil
	}
	return Pool{}, fmt.Errorf("%s: no Karpenter NodePool in the file", path)
}

// expireAfterSet reports whether a NodePool document sets
// spec.template.spec.expireAfter at all.
func expireAfterSet(doc []byte) bool {
	var np struct {
		Spec struct {
			Template struct {
				Spec map[string]any `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	if sigsyaml.Unmarshal(doc, &np) != nil {
		return false
	}
	_, ok := np.Spec.Template.Spec["expireAfter"]
	return ok
}

// budgetsSet reports whether a NodePool document sets
// spec.disruption.budgets at all (an empty list is no budget; an absent
// key is Karpenter's default).
func budgetsSet(doc []byte) bool {
	var np struct {
		Spec struct {
			Disruption map[string]any `json:"disruption"`
		} `json:"spec"`
	}
	if sigsyaml.Unmarshal(doc, &np) != nil {
		return false
	}
	_, ok := np.Spec.Disruption["budgets"]
	return ok
}

func documents(path string) ([][]byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, errors.Unwrap(err))
	}
	r := yaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	var out [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(bytes.TrimSpace(doc)) > 0 {
			out = append(out, doc)
		}
	}
}

// cleanJSONError drops the decoder's wrapping so the field is up front.
func cleanJSONError(err error) string {
	s := err.Error()
	for _, p := range []string{"error unmarshaling JSON: while decoding JSON: ", "error converting YAML to JSON: ", "json: "} {
		s = strings.TrimPrefix(s, p)
	}
	return s
}
