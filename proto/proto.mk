# proto.mk — the ONNX schema becomes C at build time.
# protoc-c runs on the system onnx.proto (Debian's python3-onnx ships it); the
# generated onnx.pb-c.{c,h} go to $(BUILD)/proto and are never committed.
# Debian's schema is IR version 8's; the one field of later versions outcore reads is
# added to a copy when missing: ValueInfoProto.metadata_props (4, IR 10), where
# torch.export's exporter says which initializers are a module's buffers.
ONNX_PROTO ?= /usr/lib/python3/dist-packages/onnx/onnx.proto
PROTO_OUT := $(BUILD)/proto

$(PROTO_OUT)/onnx.proto: $(ONNX_PROTO)
	@mkdir -p $(PROTO_OUT)
	@test -f $(ONNX_PROTO) || { echo "missing $(ONNX_PROTO): run 'make deps'" >&2; exit 1; }
	awk '/^message ValueInfoProto/ { v = 1 } v && /metadata_props/ { has = 1 } \
	     v && /^}/ { if (!has) print "  repeated StringStringEntryProto metadata_props = 4;"; v = 0 } \
	     { print }' $(ONNX_PROTO) > $@

$(PROTO_OUT)/onnx.pb-c.c $(PROTO_OUT)/onnx.pb-c.h &: $(PROTO_OUT)/onnx.proto
	protoc-c --c_out=$(PROTO_OUT) -I$(PROTO_OUT) onnx.proto

# The generated code is not ours: compile it without our strict warnings.
$(PROTO_OUT)/onnx.pb-c.o: $(PROTO_OUT)/onnx.pb-c.c
	$(CC) $(BASE_CFLAGS) -w -c $< -o $@
