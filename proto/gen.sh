#!/bin/sh
# gen.sh regenerates internal/pb from proto/flashcore/v1/backend.proto.
#
# The generated code is committed, so building, testing and CI never need
# protoc; run this only after editing a .proto file, and commit the result.
#
# It needs protoc (3.21 or later) and the two Go code generators, at the
# versions that match go.mod's protobuf and grpc modules:
#
#   go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
#   go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
set -eu

cd "$(dirname "$0")/.."
PATH="$(go env GOPATH)/bin:$PATH"
module=github.com/flashcore/bench

protoc \
	--proto_path=proto \
	--go_out=. --go_opt=module="$module" \
	--go-grpc_out=. --go-grpc_opt=module="$module" \
	proto/flashcore/v1/backend.proto
