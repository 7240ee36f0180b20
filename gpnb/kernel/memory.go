package kernel

import (
	"bufio"
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
	total := memTotal()
	if lim := cgroupLimit(); lim > 0 && (total <= 0 || lim < total) {
		total = lim
	}
	if total <= 0 {
		return fallbackBudget
	}
	return total / 2
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
