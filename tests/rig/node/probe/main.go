// Command probe runs inside a pod on the node rig and checks what the node must give pods: Kafka
// brokers answer the Kafka protocol (ApiVersions) on their pod listener, and TCP services (the
// apiserver through its ClusterIP, i.e. through kube-proxy) accept connections.
//
//	probe kafka=10.250.0.1:30092 tcp=10.96.0.1:443 ...
//
// One line per check ("ok ..." or "FAIL ..."); exit 0 only if every check passed. Built statically
// (CGO_ENABLED=0) by tests/integration/test_node.py and packed into an image by tests/rig/node/image.py.
package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"
)

// apiVersions sends a Kafka ApiVersions v0 request and returns the number of API keys the broker lists.
func apiVersions(addr string) (int, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	clientID := "kp-rig-probe"
	body := make([]byte, 0, 64)
	body = binary.BigEndian.AppendUint16(body, 18) // api key ApiVersions
	body = binary.BigEndian.AppendUint16(body, 0)  // version 0
	body = binary.BigEndian.AppendUint32(body, 7)  // correlation id
	body = binary.BigEndian.AppendUint16(body, uint16(len(clientID)))
	body = append(body, clientID...)
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	if _, err := conn.Write(append(frame, body...)); err != nil {
		return 0, err
	}
	var size uint32
	if err := binary.Read(conn, binary.BigEndian, &size); err != nil {
		return 0, err
	}
	if size < 10 || size > 1<<20 {
		return 0, fmt.Errorf("bad response size %d", size)
	}
	resp := make([]byte, size)
	if _, err := io.ReadFull(conn, resp); err != nil {
		return 0, err
	}
	if corr := binary.BigEndian.Uint32(resp[0:4]); corr != 7 {
		return 0, fmt.Errorf("correlation id %d, sent 7", corr)
	}
	if code := int16(binary.BigEndian.Uint16(resp[4:6])); code != 0 {
		return 0, fmt.Errorf("error code %d", code)
	}
	return int(int32(binary.BigEndian.Uint32(resp[6:10]))), nil
}

func main() {
	failed := false
	for _, arg := range os.Args[1:] {
		kind, addr, found := strings.Cut(arg, "=")
		if !found {
			fmt.Printf("FAIL %s: want kafka=HOST:PORT or tcp=HOST:PORT\n", arg)
			failed = true
			continue
		}
		switch kind {
		case "kafka":
			n, err := apiVersions(addr)
			if err != nil {
				fmt.Printf("FAIL kafka %s: %v\n", addr, err)
				failed = true
			} else {
				fmt.Printf("ok kafka %s: %d api keys\n", addr, n)
			}
		case "tcp":
			conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				fmt.Printf("FAIL tcp %s: %v\n", addr, err)
				failed = true
			} else {
				conn.Close()
				fmt.Printf("ok tcp %s\n", addr)
			}
		default:
			fmt.Printf("FAIL %s: unknown check %q\n", arg, kind)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}
