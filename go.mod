module github.com/hutchzk/hutch

go 1.26

require (
	github.com/go-zookeeper/zk v1.0.4
	github.com/spf13/pflag v1.1.0
)
