# proto.mk — the ONNX schema becomes C at build time.
# protoc-c runs on the system onnx.proto (Debian's python3-onnx ships it); the
# generated onnx.pb-c.{c,h} go to $(BUILD)/proto and are never committed.
ONNX_PROTO ?= /usr/lib/python3/dist-packages/onnx/onnx.proto
PROTO_OUT := $(BUILD)/proto

$(PROTO_OUT)/onnx.pb-c.c $(PROTO_OUT)/onnx.pb-c.h &: $(ONNX_PROTO)
	@mkdir -p $(PROTO_OUT)
	@test -f $(ONNX_PROTO) || { echo "missing $(ONNX_PROTO): run 'make deps'" >&2; exit 1; }
	protoc-c --c_out=$(PROTO_OUT) -I$(dir $(ONNX_PROTO)) $(notdir $(ONNX_PROTO))

# The generated code is not ours: compile it without our strict warnings.
$(PROTO_OUT)/onnx.pb-c.o: $(PROTO_OUT)/onnx.pb-c.c
	$(CC) $(BASE_CFLAGS) -w -c $< -o $@
