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
 * Reads a process-wide counter by name. Names: models_finished, compilations_finished,
 * compilation_cache_hits, compilation_cache_misses, executions_started, executions_completed,
 * executions_failed, operations_executed, and live object counts live_models,
 * live_compilations, live_executions, live_events, live_memories, live_memory_descs,
 * live_bursts, live_objects (their sum). Returns ANEURALNETWORKS_BAD_DATA for an unknown name.
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
/* Removes every injected fault. */
MOCK_NNAPI_EXPORT void MockNnapi_clearFaults(void);
/* Number of calls that returned an injected fault since the last clear. */
MOCK_NNAPI_EXPORT uint64_t MockNnapi_getInjectedFaultCount(void);

#ifdef __cplusplus
}
#endif

#endif /* MOCK_NNAPI_MOCK_NNAPI_H_ */
