/*
 * The mock's model: what a scenario file describes (docs/mock-nvml.md), the NVML ABI types it
 * answers with, and the state faults change. Layouts follow NVIDIA's nvml.h (driver 550+); the
 * struct sizes are checked with _Static_assert so a typo cannot silently shift a field.
 */
#ifndef MOCK_NVML_H
#define MOCK_NVML_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* ---- NVML ABI ---------------------------------------------------------------------------- */

typedef int nvmlReturn_t;
enum {
  NVML_SUCCESS = 0, NVML_ERROR_UNINITIALIZED = 1, NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3, NVML_ERROR_NO_PERMISSION = 4, NVML_ERROR_ALREADY_INITIALIZED = 5,
  NVML_ERROR_NOT_FOUND = 6, NVML_ERROR_INSUFFICIENT_SIZE = 7, NVML_ERROR_INSUFFICIENT_POWER = 8,
  NVML_ERROR_DRIVER_NOT_LOADED = 9, NVML_ERROR_TIMEOUT = 10, NVML_ERROR_IRQ_ISSUE = 11,
  NVML_ERROR_LIBRARY_NOT_FOUND = 12, NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_CORRUPTED_INFOROM = 14, NVML_ERROR_GPU_IS_LOST = 15, NVML_ERROR_RESET_REQUIRED = 16,
  NVML_ERROR_OPERATING_SYSTEM = 17, NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18, NVML_ERROR_IN_USE = 19,
  NVML_ERROR_MEMORY = 20, NVML_ERROR_NO_DATA = 21, NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
  NVML_ERROR_INSUFFICIENT_RESOURCES = 23, NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
  NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25, NVML_ERROR_DEPRECATED = 26, NVML_ERROR_NOT_READY = 27,
  NVML_ERROR_GPU_NOT_FOUND = 28, NVML_ERROR_INVALID_STATE = 29, NVML_ERROR_UNKNOWN = 999,
};

typedef struct mock_gpu *nvmlDevice_t;     /* MIG handles point at a struct mock_mig instead */
typedef struct mock_set *nvmlEventSet_t;
typedef struct mock_mig *nvmlGpuInstance_t; /* a GPU instance is identified by its MIG device */

typedef struct {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
} nvmlPciInfo_t;
_Static_assert(sizeof(nvmlPciInfo_t) == 68, "nvmlPciInfo_t");

typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct { unsigned int gpu, memory; } nvmlUtilization_t;

typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;
_Static_assert(sizeof(nvmlProcessInfo_t) == 24, "nvmlProcessInfo_t");

typedef struct {
  nvmlDevice_t device;
  unsigned long long eventType, eventData;
  unsigned int gpuInstanceId, computeInstanceId;
} nvmlEventData_t;
_Static_assert(sizeof(nvmlEventData_t) == 32, "nvmlEventData_t");

typedef struct { unsigned int start, size; } nvmlGpuInstancePlacement_t;

typedef struct {
  unsigned int id, isP2pSupported, sliceCount, instanceCount, multiprocessorCount, copyEngineCount,
      decoderCount, encoderCount, jpegCount, ofaCount;
  unsigned long long memorySizeMB;
} nvmlGpuInstanceProfileInfo_t;
_Static_assert(sizeof(nvmlGpuInstanceProfileInfo_t) == 48, "nvmlGpuInstanceProfileInfo_t");

/* nvmlGpuInstanceProfileInfo_v2_t: version first, the name last (NVML_DEVICE_NAME_V2_BUFFER_SIZE 96). */
typedef struct {
  unsigned int version, id, isP2pSupported, sliceCount, instanceCount, multiprocessorCount, copyEngineCount,
      decoderCount, encoderCount, jpegCount, ofaCount;
  unsigned long long memorySizeMB;
  char name[96];
} nvmlGpuInstanceProfileInfo_v2_t;
_Static_assert(sizeof(nvmlGpuInstanceProfileInfo_v2_t) == 152, "nvmlGpuInstanceProfileInfo_v2_t");

typedef struct {
  nvmlDevice_t device;
  unsigned int id, profileId;
  nvmlGpuInstancePlacement_t placement;
} nvmlGpuInstanceInfo_t;
_Static_assert(sizeof(nvmlGpuInstanceInfo_t) == 24, "nvmlGpuInstanceInfo_t");

typedef union {
  double dVal; int siVal; unsigned int uiVal; unsigned long ulVal; unsigned long long ullVal;
  long long sllVal; unsigned short usVal;
} nvmlValue_t;

typedef struct {
  unsigned int fieldId, scopeId;
  long long timestamp, latencyUsec;
  unsigned int valueType;
  nvmlReturn_t nvmlReturn;
  nvmlValue_t value;
} nvmlFieldValue_t;
_Static_assert(sizeof(nvmlFieldValue_t) == 40, "nvmlFieldValue_t");

#define NVML_FI_DEV_GET_GPU_RECOVERY_ACTION 230
#define NVML_FI_DEV_MEMORY_TEMP 82
#define NVML_VALUE_TYPE_UNSIGNED_INT 1
#define NVML_VALUE_TYPE_UNSIGNED_LONG_LONG 3
#define NO_INSTANCE 0xFFFFFFFFu

/* Event type bits (nvml.h nvmlEventType*). */
#define EV_SINGLE_BIT_ECC 0x1ull
#define EV_DOUBLE_BIT_ECC 0x2ull
#define EV_PSTATE 0x4ull
#define EV_XID 0x8ull
#define EV_DRAM_RETIREMENT 0x400ull
#define EV_DRAM_RETIREMENT_FAILURE 0x800ull
#define EV_RECOVERY_ACTION 0x8000ull

/* nvmlGpuFabricInfo_v3_t (driver 550+); version = sizeof | 3 << 24 (v2: 36 bytes, no summary). */
typedef struct {
  unsigned int version;
  unsigned char clusterUuid[16];
  nvmlReturn_t status;
  unsigned int cliqueId;
  unsigned char state;
  unsigned int healthMask;
  unsigned char healthSummary;
} nvmlGpuFabricInfoV_t;
_Static_assert(sizeof(nvmlGpuFabricInfoV_t) == 40, "nvmlGpuFabricInfoV_t");

/* nvmlEccSramErrorStatus_v1_t; version = sizeof | 1 << 24. */
typedef struct {
  unsigned int version;
  unsigned long long aggregateUncParity, aggregateUncSecDed, aggregateCor, volatileUncParity, volatileUncSecDed,
      volatileCor, aggregateUncBucketL2, aggregateUncBucketSm, aggregateUncBucketPcie, aggregateUncBucketMcu,
      aggregateUncBucketOther;
  unsigned int bThresholdExceeded;
} nvmlEccSramErrorStatus_t;
_Static_assert(sizeof(nvmlEccSramErrorStatus_t) == 104, "nvmlEccSramErrorStatus_t");

/* ---- model -------------------------------------------------------------------------------- */

#define MAX_GPUS 16
#define MAX_MIGS 8
#define MAX_PROCS 64
#define MAX_FAULTS 256
#define MAX_SETS 32
#define MAX_QUEUE 256
#define MAX_LINKS 18
#define MAX_PROFILE_IDS 32

/* Things a scenario can mark NOT_SUPPORTED (`unsupported: [...]`). */
enum {
  U_UTILIZATION = 1 << 0, U_MEMORY = 1 << 1, U_TEMPERATURE = 1 << 2, U_POWER = 1 << 3,
  U_POWER_LIMIT = 1 << 4, U_ECC = 1 << 5, U_RETIRED_PAGES = 1 << 6, U_REMAPPED_ROWS = 1 << 7,
  U_CLOCK_EVENTS = 1 << 8, U_NVLINK = 1 << 9, U_PROCESSES = 1 << 10, U_RECOVERY_ACTION = 1 << 11,
  U_EVENTS = 1 << 12,
};

typedef struct { double *v; size_t n; } series_t;

enum { GPU_MAGIC = 0x47505530u, MIG_MAGIC = 0x4d494730u, SET_MAGIC = 0x53455430u };

typedef struct mock_mig {
  uint32_t magic;
  int parent;
  char profile[32], uuid[96];
  unsigned int giProfileId, start, size, giId, ciId;
  unsigned long long memoryMiB;
} mock_mig;

/* mps: 1 for an MPS client (listed by nvmlDeviceGetMPSComputeRunningProcesses_v3 only), else 0. */
typedef struct { unsigned int pid, gi, ci, mps; unsigned long long usedMiB; } mock_proc;

typedef struct mock_gpu {
  uint32_t magic;
  int index;
  char name[96], uuid[96], busId[32], busIdLegacy[16];
  unsigned int domain, bus, dev, pciDeviceId, pciSubSystemId;
  unsigned long long memoryTotalMiB;
  unsigned int powerLimitW;
  /* nvmlComputeMode_t: 0 DEFAULT, 2 PROHIBITED, 3 EXCLUSIVE_PROCESS (what NVIDIA's MPS control daemon sets). */
  unsigned int computeMode;
  int migCapable, migMode, migPending;
  mock_mig migs[MAX_MIGS];
  int migCount;
  unsigned int unsupported;
  unsigned int nvlinkCount;
  int linkDown[MAX_LINKS];
  unsigned long long eccVolatile[2], eccAggregate[2]; /* [corrected, uncorrected] */
  unsigned int remapCorrectable, remapUncorrectable, remapPending, remapFailure;
  int retiredPagesPending;
  unsigned int recoveryAction;
  unsigned long long supportedEvents;
  unsigned long long clockEventReasons;
  unsigned int intervalMs;
  int loop;
  series_t util, memUtil, memUsedMiB, tempC, powerW, clockEvents;
  mock_proc procs[MAX_PROCS];
  int procCount;
  int lost;
  int resetFails; /* a `resetFails` fault fired: mockNvmlResetGpu answers failure */
  int resetScope; /* scenario `resetScope`: 0 gpu (one GPU alone), 1 all (the NVLink set only), 2 none */
  unsigned int registerEventsReturn; /* non-zero: nvmlDeviceRegisterEvents refuses this GPU with it */
  unsigned int recoveryActionReturn; /* non-zero: field 230 answers this NVML error (a pre-R565 driver's oddity) */
  unsigned int resets; /* resets done (mockNvmlResetGpu) */
  int drained; /* NVML drain state (nvmlDeviceModifyDrainState): new work cannot open the GPU */
  /* Temperature limits (nvmlDeviceGetTemperatureThreshold), 0 = NOT_SUPPORTED: shutdown, slowdown, memMax, gpuMax. */
  unsigned int tempLimit[4];
  series_t memTempC; /* field 82; no series = NOT_SUPPORTED */
  series_t encUtil, decUtil; /* encoder / decoder utilization; no series = NOT_SUPPORTED */
  int hasPcie; /* pcieLink given */
  unsigned int pcieGen, pcieMaxGen, pcieWidth, pcieMaxWidth;
  unsigned int fabricState, fabricStatus, fabricHealthMask; /* state 0 = NOT_SUPPORTED (what a GPU with no NVSwitch answers) */
  int hasLinkErrors; unsigned long long linkErrors[4]; /* `nvlinkErrors`: CRC flit, CRC data, replay, recovery (fields 38/45/52/59) */
  int hasSram; unsigned int sramThresholdExceeded; /* `sram` given; else NOT_SUPPORTED */
  char migProfileNames[MAX_PROFILE_IDS][32]; /* by GI profile ID: NVML's own name (…ProfileInfoV), "" = NOT_SUPPORTED */
  unsigned long long migSliceMemoryMiB[9]; /* by memory slices (1, 2, 4, 8): a real driver's profile sizes; 0 = eighths */
} mock_gpu;

typedef enum { F_XID, F_ECC, F_REMAP_PENDING, F_REMAP_FAILURE, F_RETIRED_PENDING, F_GPU_LOST,
               F_RECOVERY_ACTION, F_NVLINK_DOWN, F_RESET_FAILS, F_PCIE_LINK, F_FABRIC, F_SRAM_THRESHOLD, F_NVLINK_ERRORS } fault_kind;

typedef struct {
  unsigned long long atMs;
  int gpu;
  fault_kind kind;
  unsigned long long xid;
  unsigned int gi, ci;
  unsigned long long corrected, uncorrected;
  unsigned int value; /* recovery action, link index, PCIe width, fabric state */
  unsigned int value2; /* PCIe generation, fabric status */
  unsigned long long linkErrors[4]; /* nvlinkErrors: added to the counters */
  int fired;
} mock_fault;

typedef struct mock_set {
  uint32_t magic;
  int used;
  unsigned long long mask[MAX_GPUS]; /* registered event types per GPU */
  nvmlEventData_t queue[MAX_QUEUE];
  size_t head, count;
  unsigned int lostPending; /* bit per GPU: a wait owes GPU_IS_LOST */
} mock_set;

typedef struct {
  pthread_mutex_t lock;
  pthread_cond_t wake;
  int initCount;
  char driverVersion[80], nvmlVersion[80];
  int cudaVersion;
  mock_gpu gpus[MAX_GPUS];
  int gpuCount;
  mock_fault faults[MAX_FAULTS];
  int faultCount;
  mock_set sets[MAX_SETS];
  int manualClock;
  double timeScale;
  unsigned long long manualMs, offsetMs;
  struct timespec start;
  char lastError[512];
  char scenarioOverride[4096];
  /* Optional live process list (scenario `processesFile`), re-read when its mtime or size moves. */
  char processesFile[1024];
  long long processesStamp[2];
  /* Optional live MIG layout (scenario `migFile`, mig-file.c), re-read when its mtime or size moves. */
  char migFile[1024];
  long long migStamp[2];
  /* Optional directory of requests from other processes (scenario `controlDir`, control-dir.c). */
  char controlDir[1024];
  /* Optional file of other clients holding the GPUs open (scenario `clientsFile`, control-dir.c):
   * `{"holders": ["gpu-operator/nvidia-dcgm-exporter-x", …]}`, read at each reset. */
  char clientsFile[1024];
  long long controlStamp;
  int clockOverride; /* -1: $MOCK_NVML_CLOCK decides; 0 real; 1 manual */
} mock_state;

extern mock_state g;

/* scenario.c */
int scenario_load(const char *path);
char *mock_read_file(const char *path);
/* processes-file.c — callers hold g.lock */
void refresh_processes_file(void);
char *read_if_changed(const char *path, long long stamp[2]);
/* mig-file.c — callers hold g.lock */
void refresh_mig_file(void);
/* control-dir.c — callers hold g.lock */
void refresh_control_dir(void);
nvmlReturn_t reset_gpu(unsigned int index);
int fault_parse(const void *json_fault, mock_fault *out, char *err, size_t err_len);

/* clock-faults.c — callers hold g.lock */
unsigned long long mock_now_ms(void);
void fire_due_faults(void);
void fire_fault(mock_fault *f);
long long next_fault_due_ms(void); /* -1 when none */

#endif
