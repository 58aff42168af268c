"""The same readings as nvml-probe.ts, through NVIDIA's own Python binding (nvidia-ml-py), so a
difference between the agent's koffi binding and the driver can be told from a difference in how
the driver answers. Read-only. Prints one JSON document."""
import json
import pynvml as n


def attempt(fn, *args):
    try:
        v = fn(*args)
        if isinstance(v, bytes):
            v = v.decode()
        return {"ok": v if isinstance(v, (int, float, str, bool, type(None), list, dict)) else str(v)}
    except n.NVMLError as e:
        return {"error": str(e), "code": e.value}
    except Exception as e:  # a binding without the call
        return {"error": repr(e)}


def struct(v):
    if hasattr(v, "_fields_"):
        return {k: struct(getattr(v, k)) for k, _ in v._fields_}
    if isinstance(v, bytes):
        return v.decode(errors="replace")
    if isinstance(v, (int, float, str)):
        return v
    try:
        return [struct(x) for x in v]
    except TypeError:
        return str(v)


n.nvmlInit()
out = {
    "bindingVersion": getattr(n, "__version__", None),
    "driver": attempt(n.nvmlSystemGetDriverVersion),
    "nvml": attempt(n.nvmlSystemGetNVMLVersion),
    "cuda": attempt(n.nvmlSystemGetCudaDriverVersion_v2),
    "gpus": [],
}
for i in range(n.nvmlDeviceGetCount()):
    h = n.nvmlDeviceGetHandleByIndex(i)
    g = {"index": i}
    g["name"] = attempt(n.nvmlDeviceGetName, h)
    g["uuid"] = attempt(n.nvmlDeviceGetUUID, h)
    try:
        g["pciBusId"] = struct(n.nvmlDeviceGetPciInfo_v3(h)).get("busId")
    except Exception as e:
        g["pciBusId"] = repr(e)
    try:
        m = n.nvmlDeviceGetMemoryInfo(h)
        g["memoryMiB"] = {"total": m.total // 2**20, "used": m.used // 2**20, "free": m.free // 2**20}
    except Exception as e:
        g["memoryMiB"] = repr(e)
    g["temperature"] = attempt(n.nvmlDeviceGetTemperature, h, 0)
    g["thresholds"] = {name: attempt(n.nvmlDeviceGetTemperatureThreshold, h, t) for name, t in
                       [("shutdown", 0), ("slowdown", 1), ("memMax", 2), ("gpuMax", 3)]}
    g["powerMw"] = attempt(n.nvmlDeviceGetPowerUsage, h)
    g["powerLimitMw"] = attempt(n.nvmlDeviceGetEnforcedPowerLimit, h)
    g["clockReasons"] = attempt(n.nvmlDeviceGetCurrentClocksEventReasons, h)
    g["pcie"] = {k: attempt(getattr(n, k), h) for k in [
        "nvmlDeviceGetCurrPcieLinkGeneration", "nvmlDeviceGetMaxPcieLinkGeneration",
        "nvmlDeviceGetGpuMaxPcieLinkGeneration", "nvmlDeviceGetCurrPcieLinkWidth",
        "nvmlDeviceGetMaxPcieLinkWidth", "nvmlDeviceGetPcieReplayCounter"] if hasattr(n, k)}
    g["eccMode"] = attempt(n.nvmlDeviceGetEccMode, h)
    g["eccVolatileUncorrected"] = attempt(n.nvmlDeviceGetTotalEccErrors, h, 1, 0)
    g["eccAggregateUncorrected"] = attempt(n.nvmlDeviceGetTotalEccErrors, h, 1, 1)
    g["remappedRows"] = attempt(n.nvmlDeviceGetRemappedRows, h)
    g["retiredPagesPending"] = attempt(n.nvmlDeviceGetRetiredPagesPendingStatus, h)
    g["migMode"] = attempt(n.nvmlDeviceGetMigMode, h)
    g["supportedEvents"] = attempt(n.nvmlDeviceGetSupportedEventTypes, h)
    try:
        fv = n.nvmlDeviceGetFieldValues(h, [82, 94, 165, 230, 19])
        g["fields"] = [{"id": f.fieldId, "rc": f.nvmlReturn, "type": f.valueType, "ull": f.value.ullVal} for f in fv]
    except Exception as e:
        g["fields"] = repr(e)
    if hasattr(n, "nvmlDeviceGetGpuFabricInfoV"):
        try:
            fi = n.c_nvmlGpuFabricInfoV_t() if hasattr(n, "c_nvmlGpuFabricInfoV_t") else None
            if fi is not None:
                fi.version = getattr(n, "nvmlGpuFabricInfo_v3", getattr(n, "nvmlGpuFabricInfo_v2", 0))
                n.nvmlDeviceGetGpuFabricInfoV(h, n.byref(fi))
                g["fabric"] = struct(fi)
        except Exception as e:
            g["fabric"] = repr(e)
    profiles = []
    for p in range(16):
        try:
            info = n.nvmlDeviceGetGpuInstanceProfileInfo(h, p, getattr(n, "nvmlGpuInstanceProfileInfo_v2", 0)) \
                if hasattr(n, "nvmlGpuInstanceProfileInfo_v2") else n.nvmlDeviceGetGpuInstanceProfileInfo(h, p)
            profiles.append({"profile": p, **struct(info)})
        except Exception as e:
            profiles.append({"profile": p, "error": repr(e)})
    g["profiles"] = profiles
    out["gpus"].append(g)
n.nvmlShutdown()
print(json.dumps(out, indent=1, default=str))
