package claimwatch

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"syscall"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/watch"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

// decodeAll decodes r to its end and returns the events and the error
// that ended it.
func decodeAll(r io.Reader) ([]watch.Event, error) {
	d := newDecoder(io.NopCloser(r))
	var out []watch.Event
	for {
		typ, obj, err := d.Decode()
		if err != nil {
			return out, err
		}
		out = append(out, watch.Event{Type: typ, Object: obj})
	}
}

// The decoder's buffer refills wherever the body's reads end: in a key,
// a string, a number, a timestamp handed whole to its own decoder, an
// object read ahead of its type. The events come out the same whatever
// the reads' sizes.
func TestEventsAreTheSameWhateverTheReadSizes(t *testing.T) {
	for name, encode := range map[string]func(testing.TB, watch.EventType, any) []byte{
		"the API server's order": eventJSON, "the object first": eventJSONObjectFirst,
	} {
		body := stream(t, encode)
		want, err := decodeAll(bytes.NewReader(body))
		if !errors.Is(err, io.EOF) || len(want) != 5 {
			t.Fatalf("%s, read whole: %d events, ended by %v", name, len(want), err)
		}
		for readName, r := range map[string]io.Reader{
			"one byte a read":   iotest.OneByteReader(bytes.NewReader(body)),
			"half the buffer":   iotest.HalfReader(bytes.NewReader(body)),
			"the last with EOF": iotest.DataErrReader(bytes.NewReader(body)),
		} {
			got, err := decodeAll(r)
			if !errors.Is(err, io.EOF) {
				t.Errorf("%s, %s: ended by %v, not io.EOF", name, readName, err)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("%s, %s: events differ from one read's (-whole +these):\n%s", name, readName, d)
			}
		}
	}
}

// A body that fails mid-event ends the watch with the read's own error,
// which the stream watcher tells apart (a reset connection is a dropped
// one, not a failure); one cut short by io.EOF ends it quietly, as
// client-go's framer does.
func TestAFailedReadIsTheWatchsEnd(t *testing.T) {
	whole := eventJSON(t, watch.Added, claimJSON(t))
	for name, tc := range map[string]struct {
		err, want error
	}{
		"a reset connection": {syscall.ECONNRESET, syscall.ECONNRESET},
		"an end mid-event":   {io.EOF, io.ErrUnexpectedEOF},
	} {
		r := io.MultiReader(bytes.NewReader(whole), bytes.NewReader(whole[:len(whole)/3]), iotest.ErrReader(tc.err))
		got, err := decodeAll(r)
		if len(got) != 1 || got[0].Type != watch.Added {
			t.Errorf("%s: events %v, want the whole one", name, got)
		}
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: ended by %v, want %v", name, err, tc.want)
		}
	}
	if _, err := decodeAll(bytes.NewReader(append(bytes.Clone(whole), " \n"...))); !errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a stream ending between events: ended by %v, want io.EOF", err)
	}
	// The last bytes coming with io.EOF are read: a malformed last event
	// is a decoding error, not a stream cut short.
	bad := append(bytes.Clone(whole), `{"type":"ADDED","object":{"metadata":}}`...)
	if got, err := decodeAll(iotest.DataErrReader(bytes.NewReader(bad))); len(got) != 1 || err == nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a malformed last event read with io.EOF: %d events, ended by %v, want a decoding error", len(got), err)
	}
}

// Of an event with two objects the last is kept, as client-go's decoding
// keeps it, whichever side of the type the first one is.
func TestTheLastObjectOfAnEventWins(t *testing.T) {
	first, second := claimJSON(t), claimJSON(t)
	second["metadata"].(map[string]any)["name"] = "second"
	a, _ := json.Marshal(first)
	b, _ := json.Marshal(second)
	body := `{"object":` + string(a) + `,"type":"MODIFIED","object":` + string(b) + "}\n"
	got, err := decodeAll(strings.NewReader(body))
	if !errors.Is(err, io.EOF) || len(got) != 1 {
		t.Fatalf("%d events, ended by %v", len(got), err)
	}
	if name := got[0].Object.(*karpv1.NodeClaim).Name; name != "second" {
		t.Errorf("kept the object named %q, want the last, %q", name, "second")
	}
}
