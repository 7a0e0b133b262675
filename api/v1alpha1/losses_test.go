package v1alpha1

import (
	"strings"
	"testing"
	"time"
)

func TestRecordLossKeepsAWeekOldestFirst(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	raw := "old@2026-11-26T11:59:59Z,mid@2026-12-01T00:00:00Z"
	got := RecordLoss(raw, Loss{Claim: "new", DeletedAt: now.Add(-time.Hour)}, now)
	if want := "mid@2026-12-01T00:00:00Z,new@2026-12-03T11:00:00Z"; got != want {
		t.Fatalf("RecordLoss = %q, want %q (the entry older than a week dropped)", got, want)
	}
	losses, err := ParseLosses(got)
	if err != nil || !Recorded(losses, "new") || !Recorded(losses, "mid") || Recorded(losses, "old") {
		t.Fatalf("ParseLosses(%q) = %v, %v", got, losses, err)
	}
}

func TestMalformedLossEntriesAreNamedAndDropped(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	raw := "a@2026-12-03T00:00:00Z,garbage,b@yesterday"
	losses, err := ParseLosses(raw)
	if err == nil || !strings.Contains(err.Error(), `"garbage"`) {
		t.Fatalf("ParseLosses error = %v, want one naming the first bad entry", err)
	}
	if len(losses) != 1 || losses[0].Claim != "a" {
		t.Fatalf("the well-formed entry is kept: %v", losses)
	}
	if got := RecordLoss(raw, Loss{Claim: "c", DeletedAt: now}, now); got != "a@2026-12-03T00:00:00Z,c@2026-12-03T12:00:00Z" {
		t.Fatalf("RecordLoss = %q: the malformed entries are not kept", got)
	}
}
