// Command gpnb trains, solves, reproduces and reports iterative Gaussian
// processes with warm-started marginal-likelihood optimisation.
//
// Usage:
//
//	gpnb <command> [flags]
//
// Run "gpnb help" for the list of commands and "gpnb <command> --help" for
// each command's flags.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/internal/atomicfile"
)

// command is one gpnb subcommand. Each lives in its own file and registers
// itself in an init function, so subcommands can be added independently.
type command struct {
	name  string
	short string // one line for "gpnb help"
	// run parses args with its own FlagSet and does the work. Output goes to
	// stdout, diagnostics to stderr. A returned error is printed once, and the
	// process exits non-zero.
	run func(args []string, stdout, stderr io.Writer) error
}

var commands = map[string]*command{}

func register(c *command) {
	if _, dup := commands[c.name]; dup {
		panic("gpnb: duplicate command " + c.name)
	}
	commands[c.name] = c
}

// errUsage marks an error already explained by printed usage (exit code 2).
var errUsage = errors.New("usage")

func usage(w io.Writer) {
	fmt.Fprintf(w, "gpnb: warm-start marginal-likelihood optimisation for iterative Gaussian processes\n\n")
	fmt.Fprintf(w, "Usage:\n  gpnb <command> [flags]\n\nCommands:\n")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].short)
	}
	fmt.Fprintf(w, "\nRun 'gpnb <command> --help' for a command's flags.\n")
}

func main() {
	setMemoryLimit()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// memoryLimitFraction is the share of physical memory the Go heap is held
// under when GOMEMLIMIT is not set.
const memoryLimitFraction = 0.9

// setMemoryLimit gives the Go runtime a soft memory limit of 90% of physical
// memory unless GOMEMLIMIT says otherwise. Without one the collector lets
// garbage grow to the size of the live heap before it runs; with a dense
// kernel matrix of 13-16 GB (protein, keggdirected at --memory-budget 16GiB)
// that would exceed the machine's memory.
func setMemoryLimit() {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	if total := kernel.PhysicalMemory(); total > 0 {
		debug.SetMemoryLimit(int64(memoryLimitFraction * float64(total)))
	}
}

// run dispatches args and returns the process exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 {
			if c, ok := commands[args[1]]; ok {
				return exitCode(c.run([]string{"--help"}, stdout, stderr), stderr)
			}
		}
		usage(stdout)
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "gpnb: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	return exitCode(c.run(args[1:], stdout, stderr), stderr)
}

func exitCode(err error, stderr io.Writer) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "gpnb") {
		msg = "gpnb: " + msg
	}
	fmt.Fprintln(stderr, msg)
	return 1
}

// newFlagSet returns a FlagSet that reports errors instead of exiting, with a
// usage text naming the command.
func newFlagSet(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("gpnb "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: gpnb %s %s\n\nFlags:\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// required prints that --name (with what it takes: "in DIR") is required,
// and the usage, and returns errUsage when value is empty.
func required(fs *flag.FlagSet, name, value string) error {
	if value == "" {
		fmt.Fprintf(fs.Output(), "%s: --%s is required\n", fs.Name(), name)
		fs.Usage()
		return errUsage
	}
	return nil
}

// parseFlags parses args. A bad value of a known flag is an error naming
// the flag and what to give (exit 1); an unknown flag or a malformed command
// line prints the usage (errUsage, exit 2).
func parseFlags(fs *flag.FlagSet, args []string) error {
	out, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(out)
	fs.Usage = usage
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.Usage()
			return err
		}
		var value, name, why string
		if n, _ := fmt.Sscanf(err.Error(), "invalid value %q for flag -%s", &value, &name); n == 2 {
			name = strings.TrimSuffix(name, ":")
			_, why, _ = strings.Cut(err.Error(), ": ")
			return fmt.Errorf("--%s %q: %s (see gpnb %s --help)", name, value, why, strings.TrimPrefix(fs.Name(), "gpnb "))
		}
		if n, _ := fmt.Sscanf(err.Error(), "invalid boolean flag %s", &name); n == 1 {
			_, why, _ = strings.Cut(err.Error(), ": ")
			return fmt.Errorf("--%s: %s (see gpnb %s --help)", strings.TrimSuffix(name, ":"), why, strings.TrimPrefix(fs.Name(), "gpnb "))
		}
		fmt.Fprintf(out, "%s: %v\n", fs.Name(), err)
		fs.Usage()
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "%s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		fs.Usage()
		return errUsage
	}
	return nil
}

// writeJSON writes v as indented JSON to path; "-" means stdout and "" means
// nowhere. Files are written atomically (temp file + rename).
func writeJSON(path string, v any, stdout io.Writer) error {
	if path == "" {
		return nil
	}
	if path != "-" {
		return atomicfile.WriteJSON(path, v, true)
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = stdout.Write(append(b, '\n'))
	return err
}
