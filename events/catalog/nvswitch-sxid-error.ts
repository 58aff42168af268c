/** `NVSwitch SXid Error` — an NVSwitch error from the kernel log (example: ./nvswitch-sxid-error.example.json). */
import * as z from 'zod';
import { agentBase, PciBusId } from '../common.ts';

export const NVSWITCH_SXID_ERROR = 'NVSwitch SXid Error';

export const NvSwitchSxidErrorDetailSchema = z
  .object({
    ...agentBase,
    /** The kernel's name for the switch: `nvidia-nvswitch3`. */
    switch: z.string().regex(/^nvidia-nvswitch\d{1,3}$/),
    /** The switch's PCI address in NVML's form. */
    pciBusId: PciBusId,
    sxid: z.number().int().min(0).max(999_999),
    /** The line's own verdict: a fatal SXid takes the links (and the GPUs' fabric) down. */
    severity: z.enum(['fatal', 'nonfatal']),
    /** The NVSwitch port the line names (`Link 32`), when it names one. */
    link: z.number().int().min(0).max(1023).optional(),
    /** The driver's text after the verdict. */
    message: z.string().max(1024),
  })
  .strict();
export type NvSwitchSxidErrorDetail = z.infer<typeof NvSwitchSxidErrorDetailSchema>;
