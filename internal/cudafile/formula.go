package cudafile

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"unicode"
)

// Formula is an integer expression of the case's shape, such as
// "ceil(Sq/64)" or "B*H*Sq*4": numbers, names (Vars), + - * / % and
// parentheses, and the functions ceil, floor, min, max and cdiv (ceil(a/b)).
// Division is exact (rational) until the end, so "ceil(Sq/64)" rounds once;
// a formula whose value is not a whole number is an error that says to use
// ceil or floor.
type Formula struct {
	text string
	root node
}

// ParseFormula parses text and checks that every name it uses is in known.
func ParseFormula(text string, known func(string) bool) (Formula, error) {
	p := &parser{text: text}
	p.next()
	root, err := p.expr()
	if err == nil && p.tok.kind != tokEnd {
		err = p.errorf("unexpected %q", p.tok.text)
	}
	if err != nil {
		return Formula{}, err
	}
	var unknown []string
	root.names(func(name string) {
		if !known(name) {
			unknown = append(unknown, name)
		}
	})
	if len(unknown) > 0 {
		return Formula{}, fmt.Errorf("%q: unknown name %s", text, strings.Join(unknown, ", "))
	}
	return Formula{text: text, root: root}, nil
}

// String is the formula as written.
func (f Formula) String() string { return f.text }

// Eval evaluates the formula with vars and returns a whole number.
func (f Formula) Eval(vars map[string]int64) (int64, error) {
	v, err := f.root.eval(vars)
	if err != nil {
		return 0, fmt.Errorf("%q: %w", f.text, err)
	}
	if !v.IsInt() {
		return 0, fmt.Errorf("%q is %s, not a whole number: round it with ceil() or floor()", f.text, v.RatString())
	}
	if !v.Num().IsInt64() {
		return 0, fmt.Errorf("%q is %s, too large", f.text, v.RatString())
	}
	return v.Num().Int64(), nil
}

type node interface {
	eval(vars map[string]int64) (*big.Rat, error)
	names(func(string))
}

type number struct{ v *big.Rat }

func (n number) eval(map[string]int64) (*big.Rat, error) { return new(big.Rat).Set(n.v), nil }
func (n number) names(func(string))                      {}

type name string

func (n name) eval(vars map[string]int64) (*big.Rat, error) {
	v, ok := vars[string(n)]
	if !ok {
		return nil, fmt.Errorf("%s has no value", string(n))
	}
	return new(big.Rat).SetInt64(v), nil
}
func (n name) names(f func(string)) { f(string(n)) }

type binary struct {
	op   byte
	l, r node
}

func (b binary) names(f func(string)) { b.l.names(f); b.r.names(f) }

func (b binary) eval(vars map[string]int64) (*big.Rat, error) {
	l, err := b.l.eval(vars)
	if err != nil {
		return nil, err
	}
	r, err := b.r.eval(vars)
	if err != nil {
		return nil, err
	}
	switch b.op {
	case '+':
		return l.Add(l, r), nil
	case '-':
		return l.Sub(l, r), nil
	case '*':
		return l.Mul(l, r), nil
	case '/':
		if r.Sign() == 0 {
			return nil, fmt.Errorf("division by zero")
		}
		return l.Quo(l, r), nil
	default: // '%'
		if !l.IsInt() || !r.IsInt() || r.Sign() == 0 {
			return nil, fmt.Errorf("%% needs whole numbers and a divisor that is not zero")
		}
		return new(big.Rat).SetInt(new(big.Int).Mod(l.Num(), r.Num())), nil
	}
}

type negate struct{ x node }

func (n negate) names(f func(string)) { n.x.names(f) }
func (n negate) eval(vars map[string]int64) (*big.Rat, error) {
	v, err := n.x.eval(vars)
	if err != nil {
		return nil, err
	}
	return v.Neg(v), nil
}

type call struct {
	fn   string
	args []node
}

// functions and how many arguments each takes.
var functions = map[string]int{"ceil": 1, "floor": 1, "min": 2, "max": 2, "cdiv": 2}

func (c call) names(f func(string)) {
	for _, a := range c.args {
		a.names(f)
	}
}

func (c call) eval(vars map[string]int64) (*big.Rat, error) {
	args := make([]*big.Rat, len(c.args))
	for i, a := range c.args {
		v, err := a.eval(vars)
		if err != nil {
			return nil, err
		}
		args[i] = v
	}
	switch c.fn {
	case "ceil":
		return ceil(args[0]), nil
	case "floor":
		return floor(args[0]), nil
	case "min":
		if args[0].Cmp(args[1]) <= 0 {
			return args[0], nil
		}
		return args[1], nil
	case "max":
		if args[0].Cmp(args[1]) >= 0 {
			return args[0], nil
		}
		return args[1], nil
	default: // cdiv
		if args[1].Sign() == 0 {
			return nil, fmt.Errorf("division by zero")
		}
		return ceil(new(big.Rat).Quo(args[0], args[1])), nil
	}
}

func floor(x *big.Rat) *big.Rat {
	q := new(big.Int).Div(x.Num(), x.Denom()) // Euclidean: rounds toward -inf for a positive denominator
	return new(big.Rat).SetInt(q)
}

func ceil(x *big.Rat) *big.Rat {
	f := floor(x)
	if f.Cmp(x) != 0 {
		f.Add(f, big.NewRat(1, 1))
	}
	return f
}

// The parser: expr = term {(+|-) term}; term = unary {(*|/|%) unary};
// unary = [-] atom; atom = number | name | name(args) | (expr).

type tokKind int

const (
	tokEnd tokKind = iota
	tokNumber
	tokName
	tokOp
)

type token struct {
	kind tokKind
	text string
}

type parser struct {
	text string
	pos  int
	tok  token
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("%q: %s", p.text, fmt.Sprintf(format, args...))
}

func (p *parser) next() {
	for p.pos < len(p.text) && p.text[p.pos] == ' ' {
		p.pos++
	}
	if p.pos >= len(p.text) {
		p.tok = token{kind: tokEnd}
		return
	}
	start := p.pos
	c := rune(p.text[p.pos])
	switch {
	case unicode.IsDigit(c):
		for p.pos < len(p.text) && unicode.IsDigit(rune(p.text[p.pos])) {
			p.pos++
		}
		p.tok = token{tokNumber, p.text[start:p.pos]}
	case c == '_' || unicode.IsLetter(c):
		for p.pos < len(p.text) && (p.text[p.pos] == '_' || unicode.IsLetter(rune(p.text[p.pos])) || unicode.IsDigit(rune(p.text[p.pos]))) {
			p.pos++
		}
		p.tok = token{tokName, p.text[start:p.pos]}
	default:
		p.pos++
		p.tok = token{tokOp, p.text[start:p.pos]}
	}
}

func (p *parser) expr() (node, error) {
	l, err := p.term()
	for err == nil && p.tok.kind == tokOp && (p.tok.text == "+" || p.tok.text == "-") {
		op := p.tok.text[0]
		p.next()
		var r node
		if r, err = p.term(); err == nil {
			l = binary{op, l, r}
		}
	}
	return l, err
}

func (p *parser) term() (node, error) {
	l, err := p.unary()
	for err == nil && p.tok.kind == tokOp && strings.Contains("*/%", p.tok.text) {
		op := p.tok.text[0]
		p.next()
		var r node
		if r, err = p.unary(); err == nil {
			l = binary{op, l, r}
		}
	}
	return l, err
}

func (p *parser) unary() (node, error) {
	if p.tok.kind == tokOp && p.tok.text == "-" {
		p.next()
		x, err := p.unary()
		return negate{x}, err
	}
	return p.atom()
}

func (p *parser) atom() (node, error) {
	tok := p.tok
	switch tok.kind {
	case tokNumber:
		p.next()
		v, err := strconv.ParseInt(tok.text, 10, 64)
		if err != nil {
			return nil, p.errorf("number %s: %v", tok.text, err)
		}
		return number{big.NewRat(v, 1)}, nil
	case tokName:
		p.next()
		if p.tok.kind == tokOp && p.tok.text == "(" {
			return p.call(tok.text)
		}
		return name(tok.text), nil
	case tokOp:
		if tok.text == "(" {
			p.next()
			x, err := p.expr()
			if err != nil {
				return nil, err
			}
			if p.tok.text != ")" {
				return nil, p.errorf("missing )")
			}
			p.next()
			return x, nil
		}
		return nil, p.errorf("unexpected %q", tok.text)
	}
	return nil, p.errorf("ends too early")
}

func (p *parser) call(fn string) (node, error) {
	want, ok := functions[fn]
	if !ok {
		return nil, p.errorf("unknown function %s (there are ceil, floor, min, max, cdiv)", fn)
	}
	p.next() // (
	var args []node
	for {
		x, err := p.expr()
		if err != nil {
			return nil, err
		}
		args = append(args, x)
		if p.tok.text != "," {
			break
		}
		p.next()
	}
	if p.tok.text != ")" {
		return nil, p.errorf("missing ) after the arguments of %s", fn)
	}
	p.next()
	if len(args) != want {
		return nil, p.errorf("%s takes %d argument(s), got %d", fn, want, len(args))
	}
	return call{fn, args}, nil
}
