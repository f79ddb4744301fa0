# outcore — every entry point. `make help` lists them.
#   make            build outcore-plan
#   make test       build and run every test (unit, CLI, PyTorch shape comparison)
#   make test SANITIZE=1   the same under ASan + UBSan (build dir build-san/)
#   make test-threads SANITIZE=thread   runtime stream threads under ThreadSanitizer (build-tsan/)
#   make CUDA=0     build without the cuda backend (default: with it when /usr/local/cuda exists)
#   make CUDA=emu BUILD=build-emu   the cuda backend on the CPU through the CUDA emulator (tests/emu/); `make test` builds it into $(BUILD)-emu
#   make gpu-tests  GPU-only suites (tests/gpu/); tools/gpu-check runs them on a GPU machine
#   make demo       ResNet-50 at batch 640: memory by class, in-core peak; every strategy at 16 GiB on v100, hybrid trace + memory plot in out/
#   make bench      import time of ResNet-50 with weights; a 100,000-node chain inspected and planned;
#                   simulator throughput (sims/s); planning time;
#                   cpu training step images/s (BASE=DIR: side by side with DIR/outcore-run, ratio)
#   make fuzz       every libFuzzer target (tests/fuzz/) for FUZZ_SECONDS each (default 60)
#   make sweep-plans  every torch 2.x fixture planned under 85% / 70% of its in-core peak and run
#                   bitwise against its in-core step (tools/plan_sweep.py; docs/planner.md)
#   make sweep-torchvision / sweep-timm / sweep-hf   long sweeps against current PyTorch
#                   (TORCH_PY: a venv's python with torch 2.x, onnx, onnxscript, timm,
#                   transformers); tables into $(BUILD)/sweep-*.md, results in docs/torchvision.md,
#                   docs/timm.md, docs/transformers.md
#   make format     format the tree with clang-format (.clang-format; make test checks it)
#   make deps       install the Debian packages the build and tests need
.DEFAULT_GOAL := all
SHELL := /bin/bash
# Builds run a job per CPU unless the command line says -jN (the top-level make only: the
# sub-makes share its jobs).
ifeq ($(MAKELEVEL),0)
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 1)
endif

CC ?= cc
SANITIZE ?= 0
BUILD ?= $(if $(filter 1,$(SANITIZE)),build-san,$(if $(filter thread,$(SANITIZE)),build-tsan,$(if $(filter fuzz,$(SANITIZE)),build-fuzz,build)))
PY := /usr/bin/python3

DEB_PACKAGES := build-essential pkg-config protobuf-c-compiler libprotobuf-c-dev libcmocka-dev libglpk-dev coinor-libcbc-dev \
  libjansson-dev libopenblas-dev libonnx-testdata librsvg2-bin python3-onnx python3-torch python3-torchvision python3-numpy \
  clang-format clang

comma := ,
# SANITIZE=fuzz (make fuzz): clang, libFuzzer coverage + ASan + UBSan, build-fuzz/.
SAN_FLAGS := $(if $(filter thread,$(SANITIZE)),-fsanitize=thread,-fsanitize=$(if $(filter fuzz,$(SANITIZE)),fuzzer-no-link$(comma))address$(comma)undefined -fno-sanitize-recover=undefined)
OPT := $(if $(filter 1 thread fuzz,$(SANITIZE)),-O1 -g -fno-omit-frame-pointer $(SAN_FLAGS),-O2 -g)
BASE_CFLAGS := -std=c11 -D_GNU_SOURCE $(OPT) -I$(BUILD)/proto -Iplanner -Iruntime
WARN := -Wall -Wextra -Wshadow -Wconversion -Wstrict-prototypes -Wmissing-prototypes \
  -Wno-sign-conversion -Wno-format-truncation -Werror
# FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION (libFuzzer's convention): shorter searches, same paths.
CFLAGS := $(BASE_CFLAGS) $(WARN) $(if $(filter fuzz,$(SANITIZE)),-Wno-unknown-warning-option \
  -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION) $(EXTRA_CFLAGS)
LDFLAGS := $(if $(filter 1 thread fuzz,$(SANITIZE)),$(SAN_FLAGS))
LIBS := -lprotobuf-c -ljansson -lglpk -lCbcSolver -lCbc -lm
RT_LIBS := -lopenblas -lpthread

include proto/proto.mk

# planner/ by stage. libcore: what both programs stand on — ir/ (IR, import/export,
# shapes, the op table), train/ (training graph, autodiff), plan/ (the plan file reader and
# verifier, profiles). libplanner: sim/ (simulator, traces), search/ (strategies, DP, ILP),
# emit/ (rewrite, layout, plan writer). outcore-run links libcore only.
CORE_SRC := $(wildcard planner/ir/*.c planner/ir/*/*.c planner/train/*.c planner/plan/*.c)
CORE_OBJ := $(CORE_SRC:%.c=$(BUILD)/%.o) $(PROTO_OUT)/onnx.pb-c.o
PLANNER_SRC := $(wildcard planner/sim/*.c planner/search/*.c planner/emit/*.c)
PLANNER_OBJ := $(PLANNER_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ := $(patsubst %.c,$(BUILD)/%.o,$(wildcard planner/cli/*.c))
# The cuda backend (runtime/cuda/): built with nvcc when the toolkit is found
# (CUDA ?= auto; `make CUDA=0` disables). Sanitizer builds (SANITIZE=1/thread)
# leave it out — the CUDA libraries are not ASan/TSan-instrumented, LSan reports
# their internal allocations, and without a GPU nothing of it runs — and use
# runtime/cuda/cuda_none.c, whose entry points fail with "not built".
CUDA_HOME ?= /usr/local/cuda
CUDA ?= $(if $(filter 1 thread fuzz,$(SANITIZE)),0,$(if $(wildcard $(CUDA_HOME)/bin/nvcc),1,0))
NVCC ?= $(CUDA_HOME)/bin/nvcc
CUDA_ONLY_SRC := $(filter-out runtime/cuda/cuda_table.c runtime/cuda/cuda_none.c,$(wildcard runtime/cuda/*.c))
RUNTIME_SRC := $(filter-out runtime/cli/% $(if $(filter 1 emu,$(CUDA)),runtime/cuda/cuda_none.c,$(CUDA_ONLY_SRC)),\
  $(wildcard runtime/*.c runtime/*/*.c))
RUNTIME_OBJ := $(RUNTIME_SRC:%.c=$(BUILD)/%.o) \
  $(if $(filter 1,$(CUDA)),$(patsubst %.cu,$(BUILD)/%.o,$(wildcard runtime/cuda/*.cu)))
ifeq ($(CUDA),1)
CFLAGS += -isystem $(CUDA_HOME)/include -DOC_HAVE_CUDA=1
RT_LIBS += -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudnn -lcublas -lcudart -lstdc++
endif
# CUDA=emu: the cuda backend built and run on the CPU against the CUDA emulator
# (tests/emu/: fake cuda_runtime.h, cudnn.h, cublas_v2.h; see tests/emu/include/emu.h),
# sanitizers allowed. The .cu files become C++ through tests/emu/cu2cpp.pl.
ifeq ($(CUDA),emu)
CFLAGS += -Itests/emu/include -DOC_HAVE_CUDA=1 -DOC_CUDA_EMU=1
RT_LIBS += -lstdc++
RUNTIME_OBJ += $(patsubst %.c,$(BUILD)/%.o,$(wildcard tests/emu/*.c)) \
  $(patsubst %.cu,$(BUILD)/%.emu.o,$(wildcard runtime/cuda/*.cu))
endif
# The emulator's reference convolution loops (tests/emu/emu_conv_ref.c) are the emulated
# step's hot spot (80% of it under ASan): SANITIZE=1 builds them optimised and without
# ASan/UBSan, as the emulator checks every pointer they touch against its cudaMalloc
# block first; the suites' time goes to outcore's own code (CI's 45 minutes).
ifeq ($(SANITIZE),1)
$(BUILD)/tests/emu/emu_conv_ref.o: CFLAGS := $(subst $(OPT),-O2 -g,$(CFLAGS))
endif
EMU_CXXFLAGS := -std=c++17 $(OPT) -Wall -Wextra -Werror -Itests/emu/include -Iplanner -Iruntime -Iruntime/cuda \
  -DOC_HAVE_CUDA=1 -DOC_CUDA_EMU=1
# sm_90 (H100/H200) machine code + PTX for newer GPUs.
NVCCFLAGS := -std=c++17 -O2 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
  -Xcompiler -Wall,-Wextra -Werror all-warnings -Iplanner -Iruntime -Iruntime/cuda
# What the .cu files include besides the CUDA headers (the -MMD .d files list them all after a
# first build; this list covers the first one).
CU_DEPS := runtime/cuda/cuda_launch.h runtime/cuda/cu_device.h runtime/cuda/cu_kernels.h runtime/pointwise.h \
  runtime/resize_coord.h runtime/pad_coord.h planner/ir/ops/op_list.h
RUN_CLI_OBJ := $(patsubst %.c,$(BUILD)/%.o,$(wildcard runtime/cli/*.c))
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)

PLAN_BIN := $(BUILD)/outcore-plan
RUN_BIN := $(if $(RUN_CLI_OBJ),$(BUILD)/outcore-run)
LINK_LIBS := $(BUILD)/libruntime.a $(BUILD)/libplanner.a $(BUILD)/libcore.a

.PHONY: all test unit-tests gpu-tests cuda-emu test-threads demo deps help clean bench format fuzz fuzz-bins \
	sweep-torchvision sweep-timm sweep-hf sweep-plans
all: $(PLAN_BIN) $(RUN_BIN)

$(BUILD)/%.o: %.c $(PROTO_OUT)/onnx.pb-c.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/runtime/cuda/%.o: runtime/cuda/%.cu $(CU_DEPS)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/runtime/cuda/%.emu.cpp: runtime/cuda/%.cu tests/emu/cu2cpp.pl
	@mkdir -p $(dir $@)
	perl tests/emu/cu2cpp.pl $< > $@.tmp && mv $@.tmp $@

$(BUILD)/runtime/cuda/%.emu.o: $(BUILD)/runtime/cuda/%.emu.cpp $(CU_DEPS) tests/emu/include/emu.h \
  tests/emu/include/cuda_runtime.h
	$(CXX) $(EMU_CXXFLAGS) -MMD -MP -x c++ -c $< -o $@

$(BUILD)/libcore.a: $(CORE_OBJ)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/libplanner.a: $(PLANNER_OBJ)
	rm -f $@ && ar rcs $@ $^

# The runtime library (loader, executor, backends); empty until runtime/ has sources.
$(BUILD)/libruntime.a: $(RUNTIME_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(PLAN_BIN): $(CLI_OBJ) $(BUILD)/libplanner.a $(BUILD)/libcore.a
	$(CC) $(LDFLAGS) $^ $(LIBS) -o $@

# No libplanner here: a runtime reference to the simulator or a strategy fails to link.
$(BUILD)/outcore-run: $(RUN_CLI_OBJ) $(BUILD)/libruntime.a $(BUILD)/libcore.a
	$(CC) $(LDFLAGS) $^ $(LIBS) $(RT_LIBS) -o $@

$(BUILD)/tests/%: tests/unit/%.c $(LINK_LIBS) $(PROTO_OUT)/onnx.pb-c.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -Itests $< $(LINK_LIBS) $(LDFLAGS) $(LIBS) $(RT_LIBS) -lcmocka -o $@

unit-tests: $(UNIT_BIN)

# Test helpers (tests/tools/): reseal forges the seal of an edited plan.
TEST_TOOLS := $(patsubst tests/tools/%.c,$(BUILD)/tests/tools/%,$(wildcard tests/tools/*.c))
$(BUILD)/tests/tools/%: tests/tools/%.c $(BUILD)/libcore.a $(PROTO_OUT)/onnx.pb-c.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< $(BUILD)/libcore.a $(LDFLAGS) $(LIBS) -o $@

# GPU-only suites (tests/gpu/, run by tools/gpu-check on a machine with a GPU).
GPU_TEST_BIN := $(patsubst tests/gpu/%.c,$(BUILD)/gpu-tests/%,$(wildcard tests/gpu/test_*.c))
$(BUILD)/gpu-tests/%: tests/gpu/%.c $(LINK_LIBS) $(PROTO_OUT)/onnx.pb-c.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests -Itests/unit $< $(LINK_LIBS) $(LDFLAGS) $(LIBS) $(RT_LIBS) -lcmocka -o $@
gpu-tests: $(GPU_TEST_BIN)

# The runtime's threaded code (three stream threads, events) under ThreadSanitizer:
# `make test-threads SANITIZE=thread`; any report fails (halt_on_error).
TSAN_ENV := TSAN_OPTIONS=halt_on_error=1 OPENBLAS_NUM_THREADS=1
# Also the cuda backend on the CUDA emulator ($(BUILD)-emu): one swap-all plan
# (ResNet-18 at 64x64, batch 2, 97% of its in-core peak) on --backend cuda, so TSan
# sees the executor's stream/event ordering exactly as CUDA would give it.
EMU_T := $(BUILD)-emu/tsan-plan
EMU_PLAN := $(BUILD)-emu/outcore-plan plan $(EMU_T)/resnet18_op13.onnx --batch 2 --device v100
test-threads: $(BUILD)/tests/test_streams $(BUILD)/outcore-run cuda-emu
	$(TSAN_ENV) $(BUILD)/tests/test_streams
	$(TSAN_ENV) $(BUILD)/outcore-run graphs/resnet18_op13.onnx --batch 2 --steps 2
	@mkdir -p $(EMU_T)
	$(PY) tools/export_models.py --models resnet18 --opset 13 --image-size 64 --structure-only \
	  --out $(EMU_T) >/dev/null
	peak=$$($(EMU_PLAN) --budget 1TB --strategy incore --json | sed -n 's/.*"peak_bytes": \([0-9]*\).*/\1/p') && \
	budget=$$((peak * 97 / 100)) && \
	$(EMU_PLAN) --budget $$budget --strategy swap-all -o $(EMU_T)/swap.onnx >/dev/null && \
	$(TSAN_ENV) $(BUILD)-emu/outcore-run $(EMU_T)/swap.onnx --backend cuda --steps 2 --budget $$budget

# The emulated-cuda variant of this build ($(BUILD)-emu, tests/cli/test_cuda_emu.sh runs it).
cuda-emu:
	$(if $(filter emu,$(CUDA)),,$(MAKE) CUDA=emu BUILD=$(BUILD)-emu SANITIZE=$(SANITIZE) all gpu-tests \
	  $(patsubst tests/unit/%.c,$(BUILD)-emu/tests/%,$(wildcard tests/unit/test_emu_*.c)) \
	  $(BUILD)-emu/tests/test_op_harness $(BUILD)-emu/tests/test_cuda_backend)

# Runs every suite; the last line is "N passed, M failed".
test: $(PLAN_BIN) $(RUN_BIN) $(UNIT_BIN) $(TEST_TOOLS) cuda-emu
	@BUILD=$(BUILD) PY=$(PY) bash tests/run_all.sh

# Fuzzing (tests/fuzz/): libFuzzer targets for the importer, the profile reader, the
# plan loader + verifier + first step, both command lines and the TensorProto readers; built with clang in
# build-fuzz/ (SANITIZE=fuzz). `make fuzz FUZZ_SECONDS=N` replays each target's
# regression corpus (tests/fuzz/corpus/<target>) and seeds, then fuzzes it N seconds.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= import profile plan cli tensor npy
FUZZ_MUTATOR_import := tests/fuzz/onnx_mutator.c
FUZZ_MUTATOR_plan := tests/fuzz/onnx_mutator.c
FUZZ_LINK := $(filter-out $(BUILD)/planner/cli/main.o,$(CLI_OBJ)) $(LINK_LIBS)
$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/onnx_mutator.c $(FUZZ_LINK) $(PROTO_OUT)/onnx.pb-c.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DOC_FUZZ_MODEL='"$(CURDIR)/graphs/alexnet_op13.onnx"' \
	  $< $(FUZZ_MUTATOR_$*) $(FUZZ_LINK) -fsanitize=fuzzer,address,undefined $(LIBS) $(RT_LIBS) -o $@
fuzz-bins: $(FUZZ_TARGETS:%=$(BUILD)/fuzz/fuzz_%)
fuzz: $(PLAN_BIN)
	$(MAKE) SANITIZE=fuzz CC=clang fuzz-bins
	BUILD=$(BUILD) FUZZ_BUILD=build-fuzz FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_TARGETS="$(FUZZ_TARGETS)" \
	  PY=$(PY) bash tests/fuzz/run.sh

# Simulator throughput (sims/s) on ResNet-50 @ 640, all-swap, v100 analytic profile.
$(BUILD)/bench_sim: bench/bench_sim.c $(LINK_LIBS)
	$(CC) $(CFLAGS) $< $(LINK_LIBS) $(LDFLAGS) $(LIBS) $(RT_LIBS) -o $@

# DP planning time on DenseNet-121 @ 640; dp/hybrid/auto vs the ILP optimum on small graphs.
$(BUILD)/bench_dp: bench/bench_dp.c $(LINK_LIBS)
	$(CC) $(CFLAGS) $< $(LINK_LIBS) $(LDFLAGS) $(LIBS) $(RT_LIBS) -o $@

# Hybrid planning time on ResNet-50 @ 640, 16 GiB, v100 (leaves explored, bound hit).
$(BUILD)/bench_plan: bench/bench_plan.c $(LINK_LIBS)
	$(CC) $(CFLAGS) $< $(LINK_LIBS) $(LDFLAGS) $(LIBS) $(RT_LIBS) -o $@

bench: $(BUILD)/bench_sim $(BUILD)/bench_dp $(BUILD)/bench_plan $(PLAN_BIN) $(RUN_BIN)
	@BUILD=$(BUILD) PY=$(PY) bash bench/bench_import.sh
	@BUILD=$(BUILD) PY=$(PY) bash bench/bench_chain.sh
	$(BUILD)/bench_sim graphs/resnet50_op13.onnx 640
	$(BUILD)/bench_dp graphs/densenet121_op13.onnx 640
	$(BUILD)/bench_plan graphs/resnet50_op13.onnx 640 hybrid 16
	BUILD=$(BUILD) BASE=$(BASE) bash bench/bench_step.sh

# The sweeps of today's exporters and model zoos (hours on 2 cores; not in `make test`, whose
# fixtures tests/data/torch2 come from tools/torch_roundtrip.py fixtures).
TORCH_PY ?= python3
sweep-torchvision: $(RUN_BIN)
	BUILD=$(BUILD) $(TORCH_PY) tools/torch_roundtrip.py sweep --image-size 128 --table $(BUILD)/sweep-torchvision.md
sweep-timm: $(RUN_BIN)
	BUILD=$(BUILD) $(TORCH_PY) tools/torch_roundtrip.py sweep --models timm --draws 8 --table $(BUILD)/sweep-timm.md
sweep-hf: $(RUN_BIN)
	BUILD=$(BUILD) $(TORCH_PY) tools/hf_sweep.py --table $(BUILD)/sweep-hf.md
# Every committed torch 2.x fixture planned under 85% and 70% of its in-core peak, each plan
# run against the in-core step bit for bit (tools/plan_sweep.py; Debian's python suffices).
sweep-plans: $(PLAN_BIN) $(RUN_BIN)
	BUILD=$(BUILD) $(PY) tools/plan_sweep.py --table $(BUILD)/sweep-plans.md

demo: $(PLAN_BIN)
	$(PLAN_BIN) inspect graphs/resnet50_op13.onnx --batch 640 --training | \
	  sed -n '/^totals:/,/^saved tensors/p'
	@mkdir -p out
	$(PLAN_BIN) compare graphs/resnet50_op13.onnx --batch 640 --budget 16GiB --device v100 \
	  --of hybrid --trace out/resnet50_b640_hybrid.trace.json --svg out/resnet50_b640_hybrid.svg
	@echo "hybrid plan: timeline out/resnet50_b640_hybrid.trace.json (Perfetto / chrome://tracing)," \
	  "memory plot out/resnet50_b640_hybrid.svg"

# The tree in the style of .clang-format (tests/cli/test_format.sh checks it in `make test`).
format:
	git ls-files '*.c' '*.h' '*.cu' | xargs clang-format -i

deps:
	@if [ "$$(id -u)" = 0 ]; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(DEB_PACKAGES); \
	else \
	  echo "run as root, or: sudo apt-get install -y $(DEB_PACKAGES)"; \
	fi

help:
	@sed -n '1,/^\.DEFAULT_GOAL/p' Makefile | grep '^#' | sed 's/^# \{0,1\}//'

clean:
	rm -rf build build-san build-tsan build-emu build-san-emu build-tsan-emu build-fuzz

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
