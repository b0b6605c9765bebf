package model

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"strings"

	"github.com/hub-agents/hub/internal/micros"
)

//go:embed prices.json
var embeddedPrices []byte

// Price is what one model costs per million tokens (so $2.50 per million
// is 2_500_000 micro-dollars).
type Price struct {
	InputPerM       micros.Micros
	OutputPerM      micros.Micros
	CachedInputPerM micros.Micros
	// ContextWindow is the model's context in tokens (0: unknown).
	ContextWindow int
}

// Usage is the tokens of one model call (or a sum of calls).
type Usage struct {
	Input       int // every input token, cached ones included
	Output      int
	CachedInput int // the part of Input read from the provider's cache
}

// Add sums usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{Input: u.Input + o.Input, Output: u.Output + o.Output, CachedInput: u.CachedInput + o.CachedInput}
}

// Total is input plus output tokens.
func (u Usage) Total() int { return u.Input + u.Output }

// Cost of u at p, rounded up to the micro-dollar.
func (p Price) Cost(u Usage) micros.Micros {
	cached := min(max(u.CachedInput, 0), max(u.Input, 0))
	fresh := max(u.Input, 0) - cached
	return perM(int64(fresh), p.InputPerM) + perM(int64(cached), p.CachedInputPerM) + perM(int64(max(u.Output, 0)), p.OutputPerM)
}

// perM is what tokens cost at perMillion per million tokens, rounded up.
func perM(tokens int64, perMillion micros.Micros) micros.Micros {
	if tokens == 0 || perMillion == 0 {
		return 0
	}
	return (micros.Micros(tokens)*perMillion + 999_999) / 1_000_000
}

// Table maps model names to prices. It is safe for concurrent reads.
type Table struct {
	Version string
	models  map[string]Price
}

type priceFile struct {
	Version string                `json:"version"`
	Note    string                `json:"note,omitempty"`
	Models  map[string]priceEntry `json:"models"`
}

type priceEntry struct {
	Input         *float64 `json:"input"`
	Output        *float64 `json:"output"`
	CachedInput   *float64 `json:"cached_input,omitempty"`
	ContextWindow int      `json:"context_window,omitempty"`
}

// Prices returns the embedded table with the user's overrides from path
// (a file of the same shape; absent is fine) laid over it.
func Prices(overrides string) (*Table, error) {
	t, err := parsePrices(embeddedPrices)
	if err != nil {
		return nil, fmt.Errorf("embedded price table: %w", err)
	}
	if overrides == "" {
		return t, nil
	}
	b, err := os.ReadFile(overrides)
	if errors.Is(err, os.ErrNotExist) {
		return t, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read price overrides: %w", err)
	}
	o, err := parsePrices(b)
	if err != nil {
		return nil, fmt.Errorf("price overrides %s: %w; fix the file or remove it", overrides, err)
	}
	for k, v := range o.models {
		t.models[k] = v
	}
	if o.Version != "" {
		t.Version += "+" + o.Version
	}
	return t, nil
}

func parsePrices(b []byte) (*Table, error) {
	var f priceFile
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("not a price table (%v); expected {\"models\": {\"name\": {\"input\": 1.0, \"output\": 2.0}}}", err)
	}
	t := &Table{Version: f.Version, models: map[string]Price{}}
	for name, e := range f.Models {
		if e.Input == nil || e.Output == nil {
			return nil, fmt.Errorf("model %q needs both input and output prices (dollars per million tokens)", name)
		}
		cached := *e.Input
		if e.CachedInput != nil {
			cached = *e.CachedInput
		}
		for _, v := range []float64{*e.Input, *e.Output, cached} {
			if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) || v > 10_000 {
				return nil, fmt.Errorf("model %q has a price out of range (%g dollars per million tokens)", name, v)
			}
		}
		t.models[strings.ToLower(name)] = Price{InputPerM: micros.FromUSD(*e.Input), OutputPerM: micros.FromUSD(*e.Output),
			CachedInputPerM: micros.FromUSD(cached), ContextWindow: e.ContextWindow}
	}
	return t, nil
}

// versionSuffix matches the dated or aliased tails providers put on model
// names: gpt-4o-2024-08-06, claude-3-5-sonnet-20241022, claude-3-5-haiku-latest.
var versionSuffix = regexp.MustCompile(`-(latest|\d{4}-\d{2}-\d{2}|\d{8})$`)

// Lookup finds model's price: the exact name, then without a provider
// prefix ("openai/gpt-4o"), then without a date or -latest suffix. Nothing
// looser: a wrong price is worse than an unknown one.
func (t *Table) Lookup(model string) (Price, bool) {
	name := strings.ToLower(strings.TrimSpace(model))
	for _, n := range candidates(name) {
		if p, ok := t.models[n]; ok {
			return p, true
		}
	}
	return Price{}, false
}

func candidates(name string) []string {
	out := []string{name}
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
		out = append(out, name)
	}
	if s := versionSuffix.ReplaceAllString(name, ""); s != name {
		out = append(out, s)
	}
	return out
}
