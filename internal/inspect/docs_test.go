package inspect

import (
	"os"
	"strings"
	"testing"
)

// TestOperationsGuideQuotesTheGoldenFiles keeps the examples of
// docs/operations.md#why-isnt-my-node-rotating true: every line of each
// console block is a line of the golden file it quotes.
func TestOperationsGuideQuotesTheGoldenFiles(t *testing.T) {
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	for prompt, goldenFile := range map[string]string{
		"$ rotationctl status\n":                    "testdata/status.table",
		"$ rotationctl explain nodeclaim/night-a\n": "testdata/explain-claims.table",
	} {
		i := strings.Index(string(doc), prompt)
		if i < 0 {
			t.Errorf("docs/operations.md lacks the %q example", strings.TrimSpace(prompt))
			continue
		}
		block := string(doc[i+len(prompt):])
		block = block[:strings.Index(block, "```")]
		g, err := os.ReadFile(goldenFile)
		if err != nil {
			t.Fatal(err)
		}
		lines := map[string]bool{}
		for _, l := range strings.Split(string(g), "\n") {
			lines[l] = true
		}
		for _, l := range strings.Split(strings.TrimSuffix(block, "\n"), "\n") {
			if !lines[l] {
				t.Errorf("docs/operations.md's %q example has a line %s does not:\n%s", strings.TrimSpace(prompt), goldenFile, l)
			}
		}
	}
}
