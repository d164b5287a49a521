// Package pb holds the protobuf messages and the gRPC service of the
// host–plugin protocol, generated from proto/flashcore/v1/backend.proto.
//
// Start at sdk instead: plugin authors and the host never use this package.
// They see sdk.Backend and the sdk types, and sdk/convert.go translates.
//
// The generated files are committed so that no build needs protoc. Do not
// edit them; edit the .proto file and run proto/gen.sh.
package pb
