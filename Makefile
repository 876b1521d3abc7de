# crossbind build. `make` builds the library and the command into build/;
# `make SAN=1` builds an AddressSanitizer + UndefinedBehaviorSanitizer
# configuration into build-san/. Dependencies: scripts/setup.sh.
SAN ?= 0
# Built where it runs: tune for this processor (override with ARCH=).
ARCH ?= -march=native
ifeq ($(SAN),1)
BUILD ?= build-san
OPT := -O1 -g $(ARCH) -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
else
BUILD ?= build
OPT := -O3 -g $(ARCH)
endif

CC ?= cc
# -fno-trapping-math / -fno-math-errno: crossbind never reads floating-point
# exception flags or errno from libm; without them GCC will not vectorise
# loops that select between float values. Neither changes any result.
CFLAGS = -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wshadow -Iinclude -I$(GEN) -fopenmp \
          -fno-trapping-math -fno-math-errno $(OPT) $(EXTRA_CFLAGS)
# Any CBLAS works; OpenBLAS is the default (Debian: libopenblas-dev).
BLAS_LIBS ?= -lopenblas
# oneDNN (Debian: libdnnl-dev) as the convolution backend of large layers,
# where it is installed; DNNL=0 builds without it (CROSSBIND_CONV=blas
# turns it off at run time).
DNNL ?= $(if $(wildcard /usr/include/oneapi/dnnl/dnnl.h),1,0)
ifeq ($(DNNL),1)
CFLAGS += -DCB_HAVE_DNNL
BLAS_LIBS += -ldnnl
endif
# libjpeg (Debian: libjpeg-dev, libjpeg-turbo) and libpng (libpng-dev) decode
# the image pipeline's inputs (src/data/image.c).
LDLIBS := $(BLAS_LIBS) -lprotobuf-c -lsqlite3 -ljpeg -lpng -lz -lm
LDFLAGS := -fopenmp $(OPT)

LIB_SRC := $(sort $(filter-out src/cli/%,$(wildcard src/*/*.c)))
CLI_SRC := $(sort $(wildcard src/cli/*.c))
TEST_SRC := $(sort $(filter-out tests/onnx_conformance.c,$(wildcard tests/*.c)))
# The ONNX schema comes from Debian's libonnx-dev; protoc-c turns it into C.
ONNX_PROTO ?= /usr/include/onnx/onnx.proto
GEN := $(BUILD)/gen
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o) $(GEN)/onnx.pb-c.o
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/%.o)
TEST_OBJ := $(TEST_SRC:%.c=$(BUILD)/%.o)

all: $(BUILD)/crossbind $(BUILD)/unit_tests $(BUILD)/onnx_conformance

# Made anew each time: `ar r` keeps members whose sources are gone.
$(BUILD)/libcrossbind.a: $(LIB_OBJ)
	rm -f $@
	ar rcs $@ $^

$(BUILD)/crossbind: $(CLI_OBJ) $(BUILD)/libcrossbind.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/onnx_conformance: $(BUILD)/tests/onnx_conformance.o $(BUILD)/libcrossbind.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/onnx_conformance.o: $(GEN)/onnx.pb-c.h

$(BUILD)/unit_tests: $(TEST_OBJ) $(BUILD)/libcrossbind.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(GEN)/onnx.pb-c.c $(GEN)/onnx.pb-c.h: $(ONNX_PROTO)
	@mkdir -p $(GEN)
	cp $(ONNX_PROTO) $(GEN)/onnx.proto
	cd $(GEN) && protoc-c --c_out=. onnx.proto

# Generated code: compiled without -Werror and -Wshadow, which are rules for
# code written here, not for protoc-c's output.
$(GEN)/onnx.pb-c.o: $(GEN)/onnx.pb-c.c
	$(CC) -std=c11 -Wall $(OPT) -I$(GEN) -c -o $@ $<

# Sources that include the generated ONNX header wait for it.
$(filter $(BUILD)/src/formats/onnx_% $(BUILD)/src/delta/%,$(LIB_OBJ)): $(GEN)/onnx.pb-c.h

# The kernels multiply-add in fused instructions: in ISO C mode GCC would
# not contract a * b + c, and the direct convolution then ran as separate
# multiplies and adds at half the machine's rate.
$(filter $(BUILD)/src/ops/%,$(LIB_OBJ)): CFLAGS += -ffp-contract=fast
# The direct 3x3 kernel's 16-float vectors pass between its static
# functions; on a build without AVX-512 GCC notes that such arguments' ABI
# changed in GCC 4.6, which matters only across libraries.
$(BUILD)/src/ops/conv_direct16.o: CFLAGS += -Wno-psabi

$(BUILD)/%.o: %.c $(wildcard include/crossbind/*.h) $(wildcard src/*/*.h) $(wildcard tests/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

clean:
	rm -rf build build-san build-fuzz build-guard

.PHONY: all clean

# The benchmark suite against the other bindings (not a test): writes
# runs/bench/ and the page docs/benchmarks.md. BENCH_ARGS adds options,
# e.g. BENCH_ARGS="--models lenet5 --rounds 5".
bench: $(BUILD)/crossbind
	$(BUILD)/crossbind bench --doc docs/benchmarks.md $(BENCH_ARGS)

# The performance regression guard (instruction counts against a baseline).
perf-guard:
	bash scripts/perf_guard.sh

# The speed and memory goals (scripts/speed_goals.tsv) measured on this
# machine and checked: runs/speed-goals/goals.md; fails where one is missed.
goals: build/crossbind
	bash scripts/speed_goals.sh

.PHONY: bench perf-guard goals

# libFuzzer targets for every parser (fuzz/), built with clang, AddressSanitizer
# and UndefinedBehaviorSanitizer into build-fuzz/. They need only the parsers,
# the data readers and the study harness's readers: no kernels, BLAS or
# OpenMP. The library is compiled once (with coverage, no fuzzer main) and
# linked into each target. scripts/fuzz.sh runs them.
FUZZ_BUILD := build-fuzz
FUZZ_CC ?= clang
FUZZ_FLAGS := -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined \
              -Iinclude -I$(GEN) -Wno-unknown-pragmas
FUZZ_LIB := $(filter-out src/core/threads.c,$(wildcard src/core/*.c)) $(wildcard src/formats/*.c) \
            $(wildcard src/data/*.c) src/graph/graph.c $(wildcard src/models/*.c) \
            $(filter-out src/study/study.c,$(wildcard src/study/*.c))
FUZZ_OBJ := $(FUZZ_LIB:%.c=$(FUZZ_BUILD)/obj/%.o) $(FUZZ_BUILD)/obj/onnx.pb-c.o
FUZZ_TARGETS := $(patsubst fuzz/%.c,$(FUZZ_BUILD)/%,$(wildcard fuzz/fuzz_*.c))
FUZZ_HDR := $(wildcard include/crossbind/*.h) $(wildcard src/*/*.h) $(wildcard fuzz/*.h)

fuzz: $(FUZZ_TARGETS)

# The objects are kept between builds (make would otherwise delete them as
# intermediate files and recompile the whole library for one target).
.SECONDARY: $(FUZZ_OBJ)

$(FUZZ_BUILD)/obj/%.o: %.c $(GEN)/onnx.pb-c.h $(FUZZ_HDR)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

$(FUZZ_BUILD)/obj/onnx.pb-c.o: $(GEN)/onnx.pb-c.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

# fuzz_runner_output compiles src/study/study.c into itself (its readers are static).
$(FUZZ_BUILD)/fuzz_%: fuzz/fuzz_%.c $(FUZZ_OBJ) $(FUZZ_HDR) src/study/study.c
	@mkdir -p $(FUZZ_BUILD)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_OBJ) -lprotobuf-c -lsqlite3 -ljpeg -lpng -lz -lm

.PHONY: fuzz
