/**
 * GPU instance types the simulated region sells, with their pay-as-you-go price. The defaults are
 * the field notes' table (types, GPUs, CNY per hour); vCPU and memory are Alibaba Cloud's published
 * sizes for those types. A cloud file can add types or override any field.
 */
export interface InstanceTypeSpec {
  id: string;
  family: string;
  gpuAmount: number;
  /** As DescribeInstanceTypes says it: `NVIDIA T4`. */
  gpuSpec: string;
  /** GiB per GPU. */
  gpuMemoryGiB: number;
  cpu: number;
  memoryGiB: number;
  /** CNY per hour, pay-as-you-go (DescribePrice's TradePrice). */
  pricePerHour: number;
}

export const DEFAULT_INSTANCE_TYPES: readonly InstanceTypeSpec[] = [
  {
    id: 'ecs.gn6i-c4g1.xlarge',
    family: 'ecs.gn6i',
    gpuAmount: 1,
    gpuSpec: 'NVIDIA T4',
    gpuMemoryGiB: 16,
    cpu: 4,
    memoryGiB: 15,
    pricePerHour: 8.5,
  },
  {
    id: 'ecs.gn6v-c8g1.2xlarge',
    family: 'ecs.gn6v',
    gpuAmount: 1,
    gpuSpec: 'NVIDIA V100',
    gpuMemoryGiB: 16,
    cpu: 8,
    memoryGiB: 32,
    pricePerHour: 26,
  },
  {
    id: 'ecs.gn7i-c8g1.2xlarge',
    family: 'ecs.gn7i',
    gpuAmount: 1,
    gpuSpec: 'NVIDIA A10',
    gpuMemoryGiB: 24,
    cpu: 8,
    memoryGiB: 30,
    pricePerHour: 18,
  },
  {
    id: 'ecs.gn7e-c16g1.4xlarge',
    family: 'ecs.gn7e',
    gpuAmount: 1,
    gpuSpec: 'NVIDIA A100',
    gpuMemoryGiB: 80,
    cpu: 16,
    memoryGiB: 125,
    pricePerHour: 65,
  },
  {
    id: 'ecs.ebmgn7e.32xlarge',
    family: 'ecs.ebmgn7e',
    gpuAmount: 8,
    gpuSpec: 'NVIDIA A100',
    gpuMemoryGiB: 80,
    cpu: 128,
    memoryGiB: 1024,
    pricePerHour: 520,
  },
];
