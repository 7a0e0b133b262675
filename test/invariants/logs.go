package invariants

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// Line is one JSON log line of the controller (-log-format=json), with
// the fields the checker reads (docs/observability.md names them).
type Line struct {
	Run        int // index of the process run (its log file) in Input.Logs
	Msg        string
	Pool       string // "nodepool"
	Rotation   string // "rotation": the claim a state-machine line is about
	NodeClaim  string // "nodeclaim": the claim of a sweep or repair line
	Outcome    string
	Reason     string
	RetryCount string
	Raw        string
}

// ReadLogs parses the log files, one per process run; lines that are not
// JSON (a panic, the binary's own error line) are skipped. It returns the
// files it could not read.
func ReadLogs(paths []string) ([]Line, []string) {
	var out []Line
	var bad []string
	for run, path := range paths {
		lines, err := readLog(run, path)
		if err != nil {
			bad = append(bad, path)
			continue
		}
		out = append(out, lines...)
	}
	return out, bad
}

func readLog(run int, path string) ([]Line, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening log %s: %w", path, err)
	}
	defer f.Close()
	var out []Line
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24) // a census line can be long
	for sc.Scan() {
		text := sc.Text()
		if !strings.HasPrefix(text, "{") {
			continue
		}
		var kv map[string]any
		if json.Unmarshal([]byte(text), &kv) != nil {
			continue
		}
		str := func(k string) string { s, _ := kv[k].(string); return s }
		out = append(out, Line{Run: run, Msg: str("msg"), Pool: str("nodepool"), Rotation: str("rotation"), NodeClaim: str("nodeclaim"),
			Outcome: str("outcome"), Reason: str("reason"), RetryCount: str("retryCount"), Raw: text})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading log %s: %w", path, err)
	}
	return out, nil
}
