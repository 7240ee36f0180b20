package kernel

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// fallbackBudget is the dense-cache budget used when /proc/meminfo cannot
// be read (not Linux, or a sandbox): 2 GiB, enough for n ≈ 16000 in float64.
const fallbackBudget int64 = 2 << 30

// DefaultMemoryBudget returns the dense-cache budget used when
// Options.MemoryBudget is 0: half of the physical memory reported by
// /proc/meminfo, or half of the container's cgroup memory limit when that
// is smaller, or 2 GiB when neither can be read.
func DefaultMemoryBudget() int64 {
	total := PhysicalMemory()
	if total <= 0 {
		return fallbackBudget
	}
	return total / 2
}

// PhysicalMemory returns the memory this process may use: MemTotal from
// /proc/meminfo, or the container's cgroup limit when that is smaller; 0
// when neither can be read.
func PhysicalMemory() int64 {
	total := memTotal()
	if lim := cgroupLimit(); lim > 0 && (total <= 0 || lim < total) {
		total = lim
	}
	return max(total, 0)
}

// memTotal returns MemTotal from /proc/meminfo in bytes, or 0.
func memTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "MemTotal:") {
			continue
		}
		fields := strings.Fields(line[len("MemTotal:"):])
		if len(fields) == 0 {
			return 0
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil || kb <= 0 {
			return 0
		}
		return kb * 1024
	}
	return 0
}

// cgroupLimit returns the cgroup (v2 or v1) memory limit in bytes, or 0 when
// there is none ("max", or v1's huge sentinel) or it cannot be read.
func cgroupLimit() int64 {
	for _, p := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || v <= 0 || v >= 1<<60 {
			continue
		}
		return v
	}
	return 0
}

// ParseBytes parses a memory size: a number of bytes, optionally with a
// decimal (k, M, G, T: powers of 1000) or binary (KiB, MiB, GiB, TiB:
// powers of 1024) suffix, case-insensitive, e.g. "16GiB", "13.5G",
// "2000000000". "0", "" and "auto" give 0, which Options.MemoryBudget reads
// as DefaultMemoryBudget().
func ParseBytes(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "" || t == "auto" {
		return 0, nil
	}
	units := []struct {
		suffix string
		mult   float64
	}{
		{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
		{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
		{"k", 1e3}, {"m", 1e6}, {"g", 1e9}, {"t", 1e12}, {"b", 1},
	}
	mult := 1.0
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 || v*mult >= 1<<62 || v != v {
		return 0, fmt.Errorf("kernel: memory size %q: give a non-negative number of bytes with an optional suffix such as 16GiB, 13.5G or 500MiB (0 or auto for the default)", s)
	}
	return int64(v * mult), nil
}

// WithAllBLASThreads runs f with the BLAS using every core (GOMAXPROCS
// OpenBLAS threads with -tags openblas; gonum's gemm always does), then
// restores the pinned thread count. It is for reference measurements such
// as a machine's gemm rate: OpenBLAS does not give the same bits for
// different thread counts, so nothing whose result matters runs inside f.
func WithAllBLASThreads(f func()) {
	defer setBLASThreads(setBLASThreads(gomaxprocs()))
	f()
}
