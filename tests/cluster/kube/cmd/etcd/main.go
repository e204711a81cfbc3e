// Command etcd runs an embedded, single-member etcd on loopback for the test
// control plane: the etcd server package that k8s.io/kubernetes v1.36 is built
// against, so no separate etcd release is needed.
package main

import (
	"flag"
	"log"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

func main() {
	dataDir := flag.String("data-dir", "", "directory for etcd data (required)")
	clientURL := flag.String("listen-client-url", "http://127.0.0.1:2379", "loopback URL to serve clients on")
	peerURL := flag.String("listen-peer-url", "http://127.0.0.1:2380", "loopback URL for the (single) peer")
	flag.Parse()
	if *dataDir == "" {
		log.Fatal("--data-dir is required")
	}
	client, err := url.Parse(*clientURL)
	if err != nil {
		log.Fatalf("--listen-client-url: %v", err)
	}
	peer, err := url.Parse(*peerURL)
	if err != nil {
		log.Fatalf("--listen-peer-url: %v", err)
	}

	cfg := embed.NewConfig()
	cfg.Name = "kueue-graphql-test"
	cfg.Dir = *dataDir
	cfg.ListenClientUrls = []url.URL{*client}
	cfg.AdvertiseClientUrls = []url.URL{*client}
	cfg.ListenPeerUrls = []url.URL{*peer}
	cfg.AdvertisePeerUrls = []url.URL{*peer}
	cfg.InitialCluster = cfg.Name + "=" + peer.String()
	cfg.LogLevel = "warn"
	// Tests create and delete little; keep the disk and memory footprint small.
	cfg.QuotaBackendBytes = 2 << 30
	cfg.AutoCompactionMode = "periodic"
	cfg.AutoCompactionRetention = "5m"
	cfg.UnsafeNoFsync = true

	server, err := embed.StartEtcd(cfg)
	if err != nil {
		log.Fatalf("start etcd: %v", err)
	}
	defer server.Close()
	select {
	case <-server.Server.ReadyNotify():
		log.Printf("etcd ready on %s", client)
	case <-time.After(60 * time.Second):
		server.Server.Stop()
		log.Fatal("etcd did not become ready within 60s")
	}

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	select {
	case sig := <-signals:
		log.Printf("etcd stopping on %s", sig)
	case err := <-server.Err():
		log.Fatalf("etcd failed: %v", err)
	}
}
