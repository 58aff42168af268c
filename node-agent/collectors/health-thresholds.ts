/**
 * The health evaluator's thresholds (health.ts) and their defaults (docs/node-agent.md, Environment).
 */
export interface HealthThresholds {
  utilHighPercent: number;
  utilHighForMs: number;
  framebufferHighPercent: number;
  /** Used where the GPU reports no limits of its own, or always when `temperatureFromGpu` is false. */
  temperatureWarnC: number;
  temperatureCritC: number;
  /**
   * Follow each GPU's own limits (nvmlDeviceGetTemperatureThreshold): warning at its max operating
   * temperature, critical at its slowdown temperature. False when TEMP_WARN_C/TEMP_CRIT_C are set.
   */
  temperatureFromGpu: boolean;
  /** HBM limit where the GPU does not report one (95 °C, what an H200 reports). */
  memoryTemperatureMaxC: number;
  /**
   * PCIe generation below the link's maximum counts only while the GPU is this busy (an idle link slows down on
   * purpose).
   */
  pcieBusyPercent: number;
  /** How long a fabric probe may stay not-started/in-progress before it is reported. */
  fabricGraceMs: number;
  /** NVLink CRC errors (flit + data, all links) per minute above which the links are degrading. */
  nvlinkCrcPerMinute: number;
  /** NVLink replays per minute above which the links are degrading. */
  nvlinkReplayPerMinute: number;
  powerHighPercent: number;
  /** Margin below a threshold before a condition clears (percent points or °C). */
  hysteresis: number;
  /** Consecutive failed samples before the agent reports it cannot see the GPUs. */
  monitoringFailures: number;
}

export const DEFAULT_THRESHOLDS: HealthThresholds = {
  utilHighPercent: 95,
  utilHighForMs: 5 * 60_000,
  framebufferHighPercent: 90,
  temperatureWarnC: 80,
  temperatureCritC: 85,
  temperatureFromGpu: true,
  memoryTemperatureMaxC: 95,
  pcieBusyPercent: 50,
  fabricGraceMs: 5 * 60_000,
  // gpu-reflex's defaults, not NVIDIA's (NVIDIA publishes no rate): a healthy link counts few or none.
  nvlinkCrcPerMinute: 100,
  nvlinkReplayPerMinute: 100,
  powerHighPercent: 90,
  hysteresis: 5,
  monitoringFailures: 3,
};
