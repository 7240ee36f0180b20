package repro

import (
	"encoding/json"
	"os"
	"path/filepath"
)

// writeAtomic writes data to path so that a reader (or a process killed
// half-way, SIGKILL included) sees either the old file or the whole new one:
// it writes a temporary file in the same directory, syncs it (when durable)
// and renames it. durable false skips the fsyncs, for files such as
// status.json that are rewritten often and whose loss in a power cut matters
// little (a rename is still all or nothing).
func writeAtomic(path string, data []byte, durable bool) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	err = f.Chmod(0o644) // CreateTemp makes 0600; results are for sharing
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil && durable {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if !durable {
		return nil
	}
	if d, err := os.Open(dir); err == nil { // make the rename durable; best effort
		d.Sync()
		d.Close()
	}
	return nil
}

// writeJSONAtomic writes v as indented JSON with writeAtomic.
func writeJSONAtomic(path string, v any, durable bool) error {
	return writeJSON(path, v, durable, true)
}

// writeJSON writes v as JSON with writeAtomic, indented or compact.
func writeJSON(path string, v any, durable, indent bool) error {
	var b []byte
	var err error
	if indent {
		b, err = json.MarshalIndent(v, "", "  ")
	} else {
		b, err = json.Marshal(v)
	}
	if err != nil {
		return err
	}
	return writeAtomic(path, append(b, '\n'), durable)
}
