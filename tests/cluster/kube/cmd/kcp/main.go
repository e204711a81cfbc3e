// Command kcp is a multi-call binary holding the Kubernetes control-plane
// components that the kueue-graphql tests run against, built from the
// k8s.io/kubernetes module (hyperkube style). Each component still runs as
// its own process: the first argument picks which one this process becomes.
//
//	kcp kube-apiserver [flags]
//	kcp kube-controller-manager [flags]
//	kcp kube-scheduler [flags]
//	kcp kubectl [args]
//
// Only the chosen component's command is constructed, so their flag sets and
// signal handlers never meet in one process.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	_ "k8s.io/component-base/logs/json/register"          // JSON log format, as upstream mains do
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics, as upstream mains do
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric, as upstream mains do
	kubectlcmd "k8s.io/kubectl/pkg/cmd"
	kubectlutil "k8s.io/kubectl/pkg/cmd/util"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
)

var components = map[string]func() *cobra.Command{
	"kube-apiserver":          func() *cobra.Command { return apiserver.NewAPIServerCommand() },
	"kube-controller-manager": func() *cobra.Command { return controllermanager.NewControllerManagerCommand() },
	"kube-scheduler":          func() *cobra.Command { return scheduler.NewSchedulerCommand() },
}

func usage() {
	names := []string{"kubectl"}
	for name := range components {
		names = append(names, name)
	}
	sort.Strings(names)
	fmt.Fprintf(os.Stderr, "usage: kcp <component> [flags]\ncomponents: %v\n", names)
	os.Exit(2)
}

func main() {
	// Called through a symlink named after a component, behave as that component.
	name := filepath.Base(os.Args[0])
	args := os.Args[1:]
	if name == "kcp" {
		if len(args) == 0 {
			usage()
		}
		name, args = args[0], args[1:]
	}
	os.Args = append([]string{name}, args...)

	if name == "kubectl" {
		logs.GlogSetter(kubectlcmd.GetLogVerbosity(os.Args)) //nolint:errcheck
		command := kubectlcmd.NewDefaultKubectlCommand()
		if err := cli.RunNoErrOutput(command); err != nil {
			kubectlutil.CheckErr(err)
		}
		return
	}
	newCommand, ok := components[name]
	if !ok {
		usage()
	}
	command := newCommand()
	command.SetArgs(args)
	os.Exit(cli.Run(command))
}
