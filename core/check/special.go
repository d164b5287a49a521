package check

import (
	"encoding/binary"
	"runtime"
	"sync"

	"github.com/flashcore/bench/sdk"
)

// census counts the special elements of a whole output.
type census struct {
	unwritten, nan, inf, zero int
}

func (c *census) add(o census) {
	c.unwritten += o.unwritten
	c.nan += o.nan
	c.inf += o.inf
	c.zero += o.zero
}

// bitLayout says where a dtype keeps its exponent and mantissa.
type bitLayout struct {
	size     int
	exponent uint32 // all-ones exponent: Inf or NaN
	mantissa uint32
	poison   uint32 // every byte sdk.PoisonByte
}

func layoutOf(dtype sdk.DType) bitLayout {
	switch dtype {
	case sdk.FP16:
		return bitLayout{size: 2, exponent: 0x7C00, mantissa: 0x03FF, poison: 0xFFFF}
	case sdk.BF16:
		return bitLayout{size: 2, exponent: 0x7F80, mantissa: 0x007F, poison: 0xFFFF}
	}
	return bitLayout{size: 4, exponent: 0x7F800000, mantissa: 0x007FFFFF, poison: 0xFFFFFFFF}
}

// countSpecial classifies every element of output from its bits, spreading
// the work over every CPU (an output can hold 100M elements).
func countSpecial(output []byte, dtype sdk.DType) census {
	l := layoutOf(dtype)
	n := len(output) / l.size
	workers := runtime.GOMAXPROCS(0)
	per := (n + workers - 1) / workers
	parts := make([]census, workers)
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := min(w*per, n), min((w+1)*per, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			parts[w] = l.count(output[lo*l.size : hi*l.size])
		}()
	}
	wg.Wait()
	var total census
	for _, p := range parts {
		total.add(p)
	}
	return total
}

func (l bitLayout) count(data []byte) census {
	var c census
	for i := 0; i < len(data); i += l.size {
		bits := l.bits(data[i:])
		switch {
		case bits == l.poison:
			c.unwritten++
		case bits&l.exponent == l.exponent && bits&l.mantissa != 0:
			c.nan++
		case bits&l.exponent == l.exponent:
			c.inf++
		case bits&^l.signBit() == 0:
			c.zero++
		}
	}
	return c
}

func (l bitLayout) bits(data []byte) uint32 {
	if l.size == 2 {
		return uint32(binary.LittleEndian.Uint16(data))
	}
	return binary.LittleEndian.Uint32(data)
}

func (l bitLayout) signBit() uint32 { return 1 << (8*l.size - 1) }
