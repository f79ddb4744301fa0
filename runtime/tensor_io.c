/* tensor_io.c — see tensor_io.h. */
#include "tensor_io.h"

#include <inttypes.h>
#include <string.h>

#include "onnx.pb-c.h"

static int check_and_copy(const char *path, const ir_tensor *e, const Onnx__TensorProto *tp,
                          void *dst, oc_err *err) {
    char want[128];
    ir_shape_str(e, want, sizeof want);
    if (tp->data_type != (int32_t)e->dtype)
        return oc_fail(err, "%s: data type %d, but '%s' needs %s", path, tp->data_type, e->name,
                       ir_dtype_name(e->dtype));
    bool same = (int)tp->n_dims == e->rank;
    for (size_t i = 0; same && i < tp->n_dims; i++) same = tp->dims[i] == e->dims[i];
    if (!same) return oc_fail(err, "%s: dims do not match '%s' %s", path, e->name, want);
    int64_t bytes, numel;
    ir_tensor_bytes(e, &bytes);
    ir_tensor_numel(e, &numel);
    if (tp->has_raw_data && tp->raw_data.len) {
        if ((int64_t)tp->raw_data.len != bytes)
            return oc_fail(err, "%s: %zu bytes of data, '%s' %s needs %" PRId64, path,
                           tp->raw_data.len, e->name, want, bytes);
        memcpy(dst, tp->raw_data.data, (size_t)bytes);
    } else if (e->dtype == IR_DTYPE_FLOAT && (int64_t)tp->n_float_data == numel) {
        memcpy(dst, tp->float_data, (size_t)bytes);
    } else if (e->dtype == IR_DTYPE_INT64 && (int64_t)tp->n_int64_data == numel) {
        memcpy(dst, tp->int64_data, (size_t)bytes);
    } else {
        return oc_fail(err, "%s: no data for '%s' %s", path, e->name, want);
    }
    return OC_OK;
}

int rt_tensor_read_pb(const char *path, const ir_tensor *expect, void *dst, oc_err *err) {
    uint8_t *buf;
    size_t len;
    if (oc_read_file(path, &buf, &len, err)) return OC_ERR;
    Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, len, buf);
    oc_free(buf);
    if (!tp) return oc_fail(err, "%s: not an ONNX TensorProto", path);
    int rc = check_and_copy(path, expect, tp, dst, err);
    onnx__tensor_proto__free_unpacked(tp, NULL);
    return rc;
}
