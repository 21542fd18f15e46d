// SPDX-License-Identifier: Apache-2.0
/*
 * mock_nnapi control API: mock-only functions, never part of Android's NNAPI.
 *
 * These let tests and tools observe and steer the mock (counters, last error, fault injection)
 * without changing the behaviour of any ANeuralNetworks* function. Every name carries the
 * MockNnapi_ prefix so a program cannot confuse them with the NDK API.
 */
#ifndef MOCK_NNAPI_MOCK_NNAPI_H_
#define MOCK_NNAPI_MOCK_NNAPI_H_

#include <android/NeuralNetworksTypes.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef MOCK_NNAPI_EXPORT
#define MOCK_NNAPI_EXPORT __attribute__((visibility("default")))
#endif

/* Version string of the mock library, e.g. "mock_nnapi 0.1.0". */
MOCK_NNAPI_EXPORT const char* MockNnapi_getVersion(void);

/*
 * The BLAS the mock's GEMM-shaped kernels call, as a JSON object: "config"
 * (openblas_get_config), "core" (the kernel set OpenBLAS chose when it loaded,
 * openblas_get_corename), "core_source" (the OPENBLAS_CORETYPE it read then, or its own detection
 * from the CPU) and "threads" (the thread count the kernels use). The string stays valid until
 * the calling thread calls it again.
 */
MOCK_NNAPI_EXPORT const char* MockNnapi_getBlasInfo(void);

/*
 * Reads a process-wide counter by name. Names: models_finished, compilations_finished,
 * compilation_cache_hits, compilation_cache_misses, executions_started, executions_completed,
 * executions_failed, operations_executed, temporary_bytes_peak (the most bytes of temporary
 * operands one model run held at once: each is freed after its last reader), and live object
 * counts live_models, live_compilations, live_executions, live_events, live_memories,
 * live_memory_descs, live_bursts, live_objects (their sum). Returns ANEURALNETWORKS_BAD_DATA for
 * an unknown name.
 */
MOCK_NNAPI_EXPORT int MockNnapi_getCounter(const char* name, uint64_t* value);
/* Number of times operations of the given OperationCode were executed. */
MOCK_NNAPI_EXPORT uint64_t MockNnapi_getOperationExecutedCount(int32_t operationType);
/* Resets every counter except the live object counts. */
MOCK_NNAPI_EXPORT void MockNnapi_resetCounters(void);

/* The message of the last failed check on the calling thread ("" if none). */
MOCK_NNAPI_EXPORT const char* MockNnapi_getLastError(void);
MOCK_NNAPI_EXPORT void MockNnapi_clearLastError(void);

/*
 * Fault injection: the next `count` calls of the NNAPI function `functionName` (its exact NDK
 * name, e.g. "ANeuralNetworksCompilation_finish") return `resultCode` without doing anything.
 * count < 0 means every call until cleared. Only functions returning a result code can be
 * made to fail. Returns ANEURALNETWORKS_BAD_DATA for an unknown function name.
 */
MOCK_NNAPI_EXPORT int MockNnapi_injectFault(const char* functionName, int resultCode,
                                            int32_t count);
/* Removes every injected fault (and releases held compilations, below). */
MOCK_NNAPI_EXPORT void MockNnapi_clearFaults(void);
/* Number of calls that returned an injected fault since the last clear. */
MOCK_NNAPI_EXPORT uint64_t MockNnapi_getInjectedFaultCount(void);

/*
 * Held compilations, for testing a client's concurrency without timing: while held (hold != 0),
 * every ANeuralNetworksCompilation_finish waits before compiling until released (hold == 0, or
 * MockNnapi_clearFaults), so a compilation stays in progress for as long as a test needs.
 * MockNnapi_getHeldCompilationCount is the number of calls waiting now.
 */
MOCK_NNAPI_EXPORT void MockNnapi_holdCompilations(int32_t hold);
MOCK_NNAPI_EXPORT uint32_t MockNnapi_getHeldCompilationCount(void);

/*
 * Device profiles (docs/device-profiles.md): the phone the mock stands in for, as a set of NNAPI
 * devices with their capabilities and cost-model parameters. The first profile comes from the
 * environment variable MOCK_NNAPI_PROFILE (a built-in name or a path to a .json file), else
 * "reference" (one CPU device, "mock-reference"). MOCK_NNAPI_PROFILE_DIR names a directory
 * searched first for profile names.
 *
 * MockNnapi_setProfile selects another profile (NULL: "reference"). Returns
 * ANEURALNETWORKS_BAD_DATA for an unknown name or a bad file (MockNnapi_getLastError names the
 * file and the field). Compilations made before the switch keep running on the devices they
 * were compiled for; device handles obtained before the switch become unknown devices for new
 * calls.
 */
MOCK_NNAPI_EXPORT int MockNnapi_setProfile(const char* nameOrPath);
/* Name of the active profile. The string stays valid until the next call on this thread. */
MOCK_NNAPI_EXPORT const char* MockNnapi_getProfileName(void);
/* Where the active profile came from: the path of its file, or "built-in" (valid until the next
 * call on this thread). MockNnapi_setProfile of the path, or of the name for "built-in",
 * selects it again. */
MOCK_NNAPI_EXPORT const char* MockNnapi_getProfileOrigin(void);
/* JSON text of the active profile (valid until the next call on this thread). */
MOCK_NNAPI_EXPORT const char* MockNnapi_getProfileJson(void);
/*
 * Android's relative performance figures of every device of the active profile, as JSON
 * {"<device>": {"<data class>": {"exec_time": x, "power_usage": y}, ...}, ...}: DERIVED from
 * the cost model (docs/device-profiles.md, "Performance figures"); the runtime CPU device
 * reports 1.0. Valid until the next call on this thread.
 */
MOCK_NNAPI_EXPORT const char* MockNnapi_getDevicePerformance(void);
/* JSON array of the profile names MockNnapi_setProfile finds (valid until the next call). */
MOCK_NNAPI_EXPORT const char* MockNnapi_getAvailableProfiles(void);

/*
 * Device faults, in the spirit of TFLite's NnApiHandler; MockNnapi_clearFaults restores every
 * device. `deviceName` is a device of the active profile.
 *   HIDDEN             the device disappears: not enumerated, unknown to createForDevices.
 *   UNAVAILABLE        listed, but ANeuralNetworksDevice_wait and compilations that need it
 *                      fail with ANEURALNETWORKS_UNAVAILABLE_DEVICE (ANeuralNetworksCompilation
 *                      _create falls back to the CPU for the whole model, as Android does).
 *   FEATURE_LEVEL      the device reports (and supports only) feature level `value`, a
 *                      FeatureLevelCode.
 *   EXECUTION_TIMEOUT  the next `count` executions that use the device (count < 0: all) fail
 *                      with `value`: ANEURALNETWORKS_MISSED_DEADLINE_TRANSIENT or _PERSISTENT.
 *   THROTTLE           the device's modelled compute runs at `value` percent (1-100) of the
 *                      profile's speed (thermal throttling).
 * `count` is only used by EXECUTION_TIMEOUT. Returns ANEURALNETWORKS_BAD_DATA for an unknown
 * device, fault or value.
 */
enum {
  MOCK_NNAPI_DEVICE_FAULT_HIDDEN = 1,
  MOCK_NNAPI_DEVICE_FAULT_UNAVAILABLE = 2,
  MOCK_NNAPI_DEVICE_FAULT_FEATURE_LEVEL = 3,
  MOCK_NNAPI_DEVICE_FAULT_EXECUTION_TIMEOUT = 4,
  MOCK_NNAPI_DEVICE_FAULT_THROTTLE = 5,
};
MOCK_NNAPI_EXPORT int MockNnapi_injectDeviceFault(const char* deviceName, int32_t fault,
                                                  int64_t value, int32_t count);

/*
 * A numeric fault: the next `count` executed operations of type `operationType` (an
 * ANeuralNetworksOperationType; count < 0: all) get `offset` added to every element of their
 * TENSOR_FLOAT32 outputs, as a miscomputing driver would. For testing layer-wise comparisons
 * (`tvm-nnapi run --layerwise`). MockNnapi_clearFaults removes it. Returns
 * ANEURALNETWORKS_BAD_DATA for count 0.
 */
MOCK_NNAPI_EXPORT int MockNnapi_injectOperationFault(int32_t operationType, float offset,
                                                     int32_t count);

/*
 * MODELLED timing (docs/cost-model.md). The mock computes on the host; these numbers say how
 * long the profile's phone would take according to the cost model. They are never
 * measurements. ANeuralNetworksExecution_getDuration reports the same model.
 *
 * Traces of the last executions (default 16): per operation its device, modelled start and
 * duration, FLOPs and bytes, plus transfers and driver overheads, as JSON. MockNnapi_getLastTrace
 * returns the newest trace object ("null" if none), MockNnapi_getTraces an array of all kept
 * traces, oldest first; both strings stay valid until the next call on this thread.
 */
MOCK_NNAPI_EXPORT const char* MockNnapi_getLastTrace(void);
MOCK_NNAPI_EXPORT const char* MockNnapi_getTraces(void);
MOCK_NNAPI_EXPORT void MockNnapi_clearTraces(void);
/* How many execution traces are kept (0 turns tracing off). */
MOCK_NNAPI_EXPORT void MockNnapi_setTraceCapacity(uint32_t capacity);
/* Modelled compilation time of a finished compilation, in nanoseconds. BAD_STATE if the
 * compilation did not finish successfully. */
MOCK_NNAPI_EXPORT int MockNnapi_getModelledCompilationTime(
    const ANeuralNetworksCompilation* compilation, uint64_t* nanoseconds);

/*
 * Cost-only executions: with `enabled` != 0, executions started afterwards (process-wide)
 * validate their operations, compute every output shape and produce the MODELLED timing and
 * trace as usual, but skip the kernels: output buffers are left unwritten (their contents are
 * undefined), input buffers are never read and temporaries are reserved as untouched zero
 * pages. Meant for costing full-size models quickly (e.g. with weights in memory that was
 * never written); never for results. operations_executed and the per-operation counts leave
 * cost-only runs out (the execution counters include them); their traces carry
 * "cost_only": true. Default: off.
 */
MOCK_NNAPI_EXPORT void MockNnapi_setCostOnlyExecution(int32_t enabled);
MOCK_NNAPI_EXPORT int32_t MockNnapi_getCostOnlyExecution(void);

/*
 * The cost model on its own (docs/cost-model.md): the one implementation of the MODELLED
 * per-operation time and of the timeline the mock times its executions with, for any profile,
 * without selecting it and without NNAPI objects. The estimate, calibration and partitioning
 * call these; the mock's own executions use the same code.
 *
 * MockNnapi_createCostModel reads a profile: a built-in name, a path, or the JSON text of a
 * profile document (text starting with '{'). BAD_DATA for a bad profile, with the reason in
 * MockNnapi_getLastError. The model is immutable and may be shared between threads; free it
 * with MockNnapi_freeCostModel.
 */
typedef struct MockNnapi_CostModel MockNnapi_CostModel;
MOCK_NNAPI_EXPORT int MockNnapi_createCostModel(const char* profile, MockNnapi_CostModel** model);
MOCK_NNAPI_EXPORT void MockNnapi_freeCostModel(MockNnapi_CostModel* model);

/* The modelled cost of one operation (docs/cost-model.md, "Time of an operation"). */
typedef struct MockNnapi_OperationCost {
  double compute_us;         /* flops / peak of the data class */
  double memory_us;          /* DRAM bytes / memory bandwidth */
  double compute_efficiency; /* fraction of peak the class reaches */
  double memory_efficiency;  /* fraction of bandwidth the class reaches */
  double busy_us;            /* max(compute / compute_eff, memory / memory_eff, on-chip) */
  double overhead_us;        /* the device's per-operation driver overhead (unfused) */
  double energy_uj;
  int32_t compute_bound; /* 1 when the compute side bounds the time */
} MockNnapi_OperationCost;
/* `flops` and `bytes` of an operation of class `operationClass` ("convolution", ... as
 * MockNnapi_getCostClasses lists) in `dataClass` ("float32", ...) on the profile device named
 * `device`. BAD_DATA for an unknown device or class, or negative work. */
MOCK_NNAPI_EXPORT int MockNnapi_costOfOperation(const MockNnapi_CostModel* model,
                                                const char* device, const char* operationClass,
                                                const char* dataClass, double flops, double bytes,
                                                MockNnapi_OperationCost* cost);
/* The same with `onChipBytes` of the `bytes` read or written in the device's on-chip memory
 * (a profile's `on_chip_memory`): those are costed at its on-chip bandwidth, the rest through
 * DRAM (`memory_us` is then the DRAM part; the on-chip time overlaps it in `busy_us`). On a device
 * without on-chip memory every byte goes through DRAM. BAD_DATA also when `onChipBytes` is
 * negative or exceeds `bytes`. */
MOCK_NNAPI_EXPORT int MockNnapi_costOfOperationOnChip(const MockNnapi_CostModel* model,
                                                      const char* device,
                                                      const char* operationClass,
                                                      const char* dataClass, double flops,
                                                      double bytes, double onChipBytes,
                                                      MockNnapi_OperationCost* cost);

/* The modelled time of copying `bytes` between host memory and the memory of the profile
 * device named `device` (its transfer latency + bytes / bandwidth; 0 for a CPU device, which
 * shares host memory), the same as a trace's transfer events. BAD_DATA for an unknown device or
 * negative bytes. */
MOCK_NNAPI_EXPORT int MockNnapi_costOfTransfer(const MockNnapi_CostModel* model, const char* device,
                                               double bytes, double* us);

/* Totals of a modelled execution (microseconds, microjoules). */
typedef struct MockNnapi_ModelledTimes {
  double total_us;
  double in_driver_us;
  double on_hardware_us;
  double energy_uj;
  double compilation_us;
} MockNnapi_ModelledTimes;
/* A recorded execution: a trace object of MockNnapi_getLastTrace (from any profile) read once
 * for re-timing. BAD_DATA naming the event and field at fault for a trace it cannot read. */
typedef struct MockNnapi_RecordedExecution MockNnapi_RecordedExecution;
MOCK_NNAPI_EXPORT int MockNnapi_createRecordedExecution(const char* traceJson,
                                                        MockNnapi_RecordedExecution** recorded);
MOCK_NNAPI_EXPORT void MockNnapi_freeRecordedExecution(MockNnapi_RecordedExecution* recorded);
/* Re-times a recorded execution on the model's devices, found by the trace's device names: the
 * operations keep their work, classes, fusion and transfers; every duration comes from the
 * model's profile. With the profile the trace was recorded on, the times are the trace's own.
 * Fills `times`, and, when `retimedJson` is not NULL, sets it to the re-timed trace object
 * (valid until the next call on this thread). BAD_DATA when the profile lacks a device of the
 * trace. */
MOCK_NNAPI_EXPORT int MockNnapi_retimeExecution(const MockNnapi_CostModel* model,
                                                const MockNnapi_RecordedExecution* recorded,
                                                MockNnapi_ModelledTimes* times,
                                                const char** retimedJson);

/* The cost model's class names, as JSON: {"operation_classes": [...], "data_classes": [...],
 * "operations": {"ADD": "elementwise", ...}} (every NNAPI operation's class). */
MOCK_NNAPI_EXPORT const char* MockNnapi_getCostClasses(void);

#ifdef __cplusplus
}
#endif

#endif /* MOCK_NNAPI_MOCK_NNAPI_H_ */
