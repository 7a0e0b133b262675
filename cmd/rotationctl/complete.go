package main

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/internal/scheme"
)

// completeNames completes a command's arguments with the cluster's names,
// read with the command's own connection flags (kubectl passes them on to
// kubectl_complete-noderotation). A cluster that cannot be read completes
// nothing, without a file completion.
func completeNames(k *kubeFlags, names func(context.Context, connect, []string, string) []string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		ctx, cancel := context.WithTimeout(cmd.Context(), completeTimeout)
		defer cancel()
		out := names(ctx, k.reader, args, toComplete)
		directive := cobra.ShellCompDirectiveNoFileComp
		if len(out) > 0 && strings.HasSuffix(out[0], "/") {
			// a kind/ is half a word: the name follows without a space
			directive |= cobra.ShellCompDirectiveNoSpace
		}
		return out, directive
	}
}

// connect is a client for the completion's lists, nil when there is none:
// made only when a name is needed.
type connect func() client.Reader

func (k *kubeFlags) reader() client.Reader {
	cfg, err := k.restConfig()
	if err != nil {
		return nil
	}
	s, err := scheme.New()
	if err != nil {
		return nil
	}
	api, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return nil
	}
	return api
}

// completeTimeout keeps a shell's tab from hanging on a slow cluster.
const completeTimeout = 5 * time.Second

// nodePools: status takes any number of NodePool names, each once.
func nodePools(ctx context.Context, api connect, args []string, prefix string) []string {
	r := api()
	list := &karpv1.NodePoolList{}
	if r == nil || r.List(ctx, list) != nil {
		return nil
	}
	var out []string
	for _, np := range list.Items {
		if strings.HasPrefix(np.Name, prefix) && !slices.Contains(args, np.Name) {
			out = append(out, np.Name)
		}
	}
	return out
}

// kindSlashName: explain takes one nodeclaim/NAME or nodepool/NAME; the
// kind first, then the names of that kind.
func kindSlashName(ctx context.Context, api connect, args []string, prefix string) []string {
	if len(args) > 0 {
		return nil
	}
	kind, name, ok := strings.Cut(prefix, "/")
	if !ok {
		var out []string
		for _, k := range []string{"nodeclaim/", "nodepool/"} {
			if strings.HasPrefix(k, prefix) {
				out = append(out, k)
			}
		}
		return out
	}
	var names []string
	switch kind {
	case "nodepool":
		names = nodePools(ctx, api, nil, name)
	case "nodeclaim":
		r := api()
		list := &karpv1.NodeClaimList{}
		if r == nil || r.List(ctx, list) != nil {
			return nil
		}
		for _, c := range list.Items {
			if strings.HasPrefix(c.Name, name) {
				names = append(names, c.Name)
			}
		}
	}
	for i, n := range names {
		names[i] = kind + "/" + n
	}
	return names
}
