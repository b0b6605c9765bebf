// Package micros is hub's money: integer micro-dollars, and the one rule
// that turns them into dollars and back. Hub books, reserves and compares
// money as Micros; dollars (float64) are for the wire and for people.
//
// It imports nothing of hub, so the router, the agent and hub all use it.
package micros

import (
	"fmt"
	"math"
)

// Micros is an amount of money in micro-dollars: 1_000_000 is $1.
type Micros int64

// PerUSD is one dollar.
const PerUSD Micros = 1_000_000

// FromUSD converts dollars to micro-dollars, rounding to the nearest
// micro-dollar, half away from zero (0.0000005 is 1, -0.0000005 is -1).
// It is the only conversion from dollars.
func FromUSD(usd float64) Micros { return Micros(math.Round(usd * 1e6)) }

// USD is m in dollars. It is the only conversion to dollars.
func (m Micros) USD() float64 { return float64(m) / 1e6 }

// String formats m as dollars with two decimals, "$1.23" (and "-$1.23"),
// rounded to the cent half away from zero as FromUSD rounds.
func (m Micros) String() string {
	sign := ""
	if m < 0 {
		sign, m = "-", -m
	}
	cents := (m + PerUSD/200) / (PerUSD / 100)
	return fmt.Sprintf("%s$%d.%02d", sign, cents/100, cents%100)
}
