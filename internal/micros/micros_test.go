package micros

import (
	"math"
	"testing"
)

func TestFromUSD(t *testing.T) {
	for _, c := range []struct {
		usd  float64
		want Micros
	}{
		{0, 0},
		{1, 1_000_000},
		{0.000001, 1},
		{0.0000005, 1}, // half away from zero
		{0.0000004, 0},
		{0.0000015, 2},
		{0.0000025, 3}, // not to even
		{1.2345674, 1_234_567},
		{1.2345675, 1_234_568},
		{0.3, 300_000},
		{0.1 + 0.2, 300_000}, // 0.30000000000000004
		{19.999999, 19_999_999},
		{2.5, 2_500_000},
		{-0.0000005, -1},
		{-0.0000004, 0},
		{-1.2345675, -1_234_568},
		{-3, -3_000_000},
		{1e9, 1_000_000_000_000_000},
		{123_456_789.123456, 123_456_789_123_456},
	} {
		if got := FromUSD(c.usd); got != c.want {
			t.Errorf("FromUSD(%v) = %d, want %d", c.usd, got, c.want)
		}
	}
}

func TestUSD(t *testing.T) {
	for _, c := range []struct {
		m    Micros
		want float64
	}{{0, 0}, {1, 0.000001}, {1_234_567, 1.234567}, {-500_000, -0.5}, {PerUSD, 1}} {
		if got := c.m.USD(); got != c.want {
			t.Errorf("Micros(%d).USD() = %v, want %v", c.m, got, c.want)
		}
	}
}

// TestRoundTrip: a dollar amount with at most six decimals survives
// FromUSD then USD exactly, and an amount of micros survives USD then
// FromUSD.
func TestRoundTrip(t *testing.T) {
	for _, usd := range []float64{0, 0.000001, 0.01, 0.1, 0.29, 0.3, 1.1, 2.5, 7.31, 19.99, 123.456789,
		-0.000001, -7.31, 999_999.999999, 1e9, 1_000_000_000.000001} {
		if got := FromUSD(usd).USD(); got != usd {
			t.Errorf("FromUSD(%v).USD() = %v", usd, got)
		}
	}
	for m := Micros(-2_000_000); m <= 2_000_000; m += 997 {
		if got := FromUSD(m.USD()); got != m {
			t.Fatalf("FromUSD(Micros(%d).USD()) = %d", m, got)
		}
	}
	for _, m := range []Micros{math.MaxInt32, 1 << 52, -(1 << 52)} {
		if got := FromUSD(m.USD()); got != m {
			t.Errorf("FromUSD(Micros(%d).USD()) = %d", m, got)
		}
	}
}

func TestString(t *testing.T) {
	for _, c := range []struct {
		m    Micros
		want string
	}{
		{0, "$0.00"}, {1_000_000, "$1.00"}, {300_000, "$0.30"}, {4_999, "$0.00"}, {5_000, "$0.01"},
		{15_000, "$0.02"}, {7_310_000, "$7.31"}, {12_345_678, "$12.35"}, {1_234_500_000, "$1234.50"},
		{-5_000, "-$0.01"}, {-250_000, "-$0.25"}, {-1_500_000, "-$1.50"},
	} {
		if got := c.m.String(); got != c.want {
			t.Errorf("Micros(%d).String() = %q, want %q", c.m, got, c.want)
		}
	}
}
