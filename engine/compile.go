package engine

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
)

// costLimit bounds the estimated worst-case cost of one fact or guard. The
// bound is checked once at compile time (static estimation, with annotation
// strings assumed at most maxInputSize characters), so evaluation pays no
// runtime cost tracking; the expressions have no loops, so the estimate is
// a true bound.
const costLimit = 1_000

// maxInputSize is the size the cost estimate assumes for string inputs.
const maxInputSize = 1024

// FactFunc supplies a fact from Go where CEL cannot reach cheaply (the
// table names it with `observer:`).
type FactFunc func(*Snapshot) (any, error)

// Options are the engine's collaborators: the action catalog the steps are
// checked against and the Go observers facts may name.
type Options struct {
	Catalog   Catalog
	FactFuncs map[string]FactFunc
}

// fact is a compiled fact.
type fact struct {
	def      FactDef
	index    int
	prg      cel.Program
	observer FactFunc
	inputs   []string // the snapshot inputs the expression reads
	// changes are the compiled changesAt expressions.
	changes []cel.Program
	// direct reads the value straight from the snapshot when the
	// expression is nothing but one input: same result, no interpretation.
	direct func(*Snapshot) any
}

// domain lists the fact's possible values in enumeration order.
func (f *fact) domain() []any {
	if f.def.Type == "bool" {
		return []any{false, true}
	}
	out := make([]any, len(f.def.Values))
	for i, v := range f.def.Values {
		out[i] = v
	}
	return out
}

// row is a compiled transition.
type row struct {
	t     *Transition
	guard cel.Program
	facts []string // the facts the guard reads
}

func (r *row) label() string { return fmt.Sprintf("%q (line %d)", r.t.ID, r.t.line) }

func inputEnv() (*cel.Env, error) {
	opts := make([]cel.EnvOption, 0, len(inputs))
	for _, in := range inputs {
		opts = append(opts, cel.Variable(in.name, in.typ))
	}
	return cel.NewEnv(opts...)
}

func factEnv(facts []*fact) (*cel.Env, error) {
	opts := make([]cel.EnvOption, 0, len(facts))
	for _, f := range facts {
		t := cel.BoolType
		if f.def.Type == "enum" {
			t = cel.StringType
		}
		opts = append(opts, cel.Variable(f.def.Name, t))
	}
	return cel.NewEnv(opts...)
}

// compileFacts type-checks every fact against the snapshot inputs.
func compileFacts(defs []FactDef, observers map[string]FactFunc) ([]*fact, error) {
	env, err := inputEnv()
	if err != nil {
		return nil, fmt.Errorf("rules: building the fact environment: %w", err)
	}
	var errs []error
	facts := make([]*fact, 0, len(defs))
	for i, d := range defs {
		f := &fact{def: d, index: i}
		facts = append(facts, f)
		if err := f.compileChanges(env); err != nil {
			errs = append(errs, err)
		}
		if d.Observer != "" {
			if f.observer = observers[d.Observer]; f.observer == nil {
				errs = append(errs, fmt.Errorf("rules: line %d: fact %q names observer %q, which is not registered", d.line, d.Name, d.Observer))
			}
			continue
		}
		want := cel.BoolType
		if d.Type == "enum" {
			want = cel.StringType
		}
		prg, refs, err := compile(env, d.Expr, want)
		if err != nil {
			errs = append(errs, fmt.Errorf("rules: line %d: fact %q: %w", d.line, d.Name, err))
			continue
		}
		f.prg, f.inputs = prg, refs
		switch readsNow := slices.Contains(refs, "now"); {
		case readsNow && len(d.ChangesAt) == 0:
			errs = append(errs, fmt.Errorf("rules: line %d: fact %q reads now but declares no changesAt: no pass would wake when its value changes", d.line, d.Name))
		case !readsNow && len(d.ChangesAt) > 0:
			errs = append(errs, fmt.Errorf("rules: line %d: fact %q declares changesAt but does not read now: its value changes only with the observation", d.line, d.Name))
		}
		if ast, _ := env.Compile(d.Expr); isLoneInput(ast.NativeRep()) {
			f.direct = inputs[inputIndex[refs[0]]].get
		}
	}
	return facts, errors.Join(errs...)
}

// compileChanges type-checks the fact's changesAt: each a timestamp over
// the inputs other than now (an instant that moves with the clock is no
// instant to wake at).
func (f *fact) compileChanges(env *cel.Env) error {
	var errs []error
	for _, expr := range f.def.ChangesAt {
		prg, refs, err := compile(env, expr, cel.TimestampType)
		if err == nil && slices.Contains(refs, "now") {
			err = fmt.Errorf("%q reads now", expr)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("rules: line %d: fact %q changesAt: %w", f.def.line, f.def.Name, err))
			continue
		}
		f.changes = append(f.changes, prg)
	}
	return errors.Join(errs...)
}

// compileGuard type-checks a guard against the facts only: a guard that
// reads a snapshot input directly does not compile.
func compileGuard(env *cel.Env, tr *Transition, facts map[string]*fact) (*row, error) {
	// the proof evaluates guards with the facts not yet assigned unknown
	prg, refs, err := compile(env, tr.Guard, cel.BoolType, cel.OptPartialEval)
	if err != nil {
		return nil, fmt.Errorf("rules: line %d: transition %q guard: %w", tr.line, tr.ID, err)
	}
	ast, _ := env.Compile(tr.Guard)
	for _, lit := range stringLiterals(ast.NativeRep().Expr()) {
		if !literalInDomain(lit, refs, facts) {
			return nil, fmt.Errorf("rules: line %d: transition %q guard compares with %q, which is not a value of any enum fact it reads", tr.line, tr.ID, lit)
		}
	}
	return &row{t: tr, guard: prg, facts: refs}, nil
}

func compile(env *cel.Env, expr string, want *cel.Type, opts ...cel.EvalOption) (cel.Program, []string, error) {
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, nil, errors.New(strings.ReplaceAll(iss.Err().Error(), "\n", " "))
	}
	if !ast.OutputType().IsExactType(want) {
		return nil, nil, fmt.Errorf("%q evaluates to %s, want %s", expr, ast.OutputType(), want)
	}
	est, err := env.EstimateCost(ast, sizeEstimator{})
	if err != nil {
		return nil, nil, fmt.Errorf("estimating the cost of %q: %w", expr, err)
	}
	if est.Max > costLimit {
		return nil, nil, fmt.Errorf("%q may cost %d, over the limit of %d", expr, est.Max, costLimit)
	}
	prg, err := env.Program(ast, cel.EvalOptions(append(opts, cel.OptOptimize)...))
	if err != nil {
		return nil, nil, err
	}
	return prg, references(ast.NativeRep()), nil
}

// references lists the variables an expression reads, sorted.
func references(a *celast.AST) []string {
	seen := map[string]bool{}
	for _, r := range a.ReferenceMap() {
		if r.Value == nil && r.Name != "" && len(r.OverloadIDs) == 0 {
			seen[r.Name] = true
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// stringLiterals collects the string constants of an expression.
func stringLiterals(e celast.Expr) []string {
	var out []string
	celast.PostOrderVisit(e, celast.NewExprVisitor(func(x celast.Expr) {
		if x.Kind() == celast.LiteralKind {
			if s, ok := x.AsLiteral().(types.String); ok {
				out = append(out, string(s))
			}
		}
	}))
	return out
}

func literalInDomain(lit string, refs []string, facts map[string]*fact) bool {
	for _, r := range refs {
		if f := facts[r]; f != nil && f.def.Type == "enum" && slices.Contains(f.def.Values, lit) {
			return true
		}
	}
	return false
}

// sizeEstimator bounds every input of unknown size by maxInputSize.
type sizeEstimator struct{}

func (sizeEstimator) EstimateSize(checker.AstNode) *checker.SizeEstimate {
	return &checker.SizeEstimate{Min: 0, Max: maxInputSize}
}

func (sizeEstimator) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

// isLoneInput reports whether the whole expression is one input variable.
func isLoneInput(a *celast.AST) bool {
	r, ok := a.ReferenceMap()[a.Expr().ID()]
	return ok && r.Value == nil && len(r.OverloadIDs) == 0 && r.Name != ""
}
