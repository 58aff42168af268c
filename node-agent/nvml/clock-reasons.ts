/**
 * nvmlClocksEventReason* bits (nvml.h), named. A set bit says why the clocks are below maximum;
 * the thermal and power-brake ones are the health signals, the rest are policy.
 */
export const CLOCK_EVENT_REASONS: ReadonlyArray<readonly [bit: number, name: string]> = [
  [0x1, 'gpuIdle'],
  [0x2, 'applicationsClocksSetting'],
  [0x4, 'swPowerCap'],
  [0x8, 'hwSlowdown'],
  [0x10, 'syncBoost'],
  [0x20, 'swThermalSlowdown'],
  [0x40, 'hwThermalSlowdown'],
  [0x80, 'hwPowerBrakeSlowdown'],
  [0x100, 'displayClockSetting'],
];

/**
 * The reasons that mean the hardware (or the driver, for heat) is holding the clocks down: the
 * health collector's `throttling` condition. Named from the table above, so the two can never
 * disagree on a spelling again (they once did: nothing ever matched, mask 0x48 fired nothing).
 */
export const HW_THROTTLE_REASONS: ReadonlySet<string> = new Set(
  ['hwSlowdown', 'hwThermalSlowdown', 'hwPowerBrakeSlowdown', 'swThermalSlowdown'].filter((n) =>
    CLOCK_EVENT_REASONS.some(([, name]) => name === n),
  ),
);

/** Names for every set bit; bits NVML may add later come out as `bit0x200`. */
export function clockEventReasonNames(mask: number): string[] {
  const names: string[] = [];
  let rest = mask;
  for (const [bit, name] of CLOCK_EVENT_REASONS) {
    if (mask & bit) names.push(name);
    rest &= ~bit;
  }
  for (let bit = 1; rest !== 0 && bit <= 0x80000000; bit *= 2) {
    if (rest & bit) {
      names.push(`bit0x${bit.toString(16)}`);
      rest &= ~bit;
    }
  }
  return names;
}
