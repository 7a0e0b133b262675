package controller

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
)

// EventBroadcaster is the manager's Event broadcaster with client-go's spam
// filter keyed by reason as well as object: by default every Warning on a
// NodePool shares one budget (a burst of 25, then one per 5 minutes), so a
// flood of one reason would silence the rest — a GovernanceLost or
// PolicyConflict must never be lost to an earlier run of InvalidAnnotation.
// The manager owns it for the life of the process.
func EventBroadcaster() record.EventBroadcaster {
	return record.NewBroadcaster(record.WithCorrelatorOptions(record.CorrelatorOptions{SpamKeyFunc: spamKey}))
}

// spamKey is client-go's key (source, object, type) plus the reason.
func spamKey(e *corev1.Event) string {
	o := e.InvolvedObject
	return strings.Join([]string{
		e.Source.Component, e.Source.Host, o.Kind, o.Namespace, o.Name, string(o.UID), o.APIVersion, e.Type, e.Reason,
	}, "\x00")
}
