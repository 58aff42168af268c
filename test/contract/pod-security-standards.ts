/**
 * The Pod Security Standards' controls, written again from the standard itself
 * (https://kubernetes.io/docs/concepts/security/pod-security-standards/, "Baseline" and "Restricted"
 * tables, policy version latest), applied to a pod spec as Pod Security Admission applies them to a
 * workload's template. Each finding names its control and the field, so a test can allow exactly the
 * ones a manifest explains and fail on any other.
 */

export type Level = 'privileged' | 'baseline' | 'restricted';

type SecurityContext = {
  privileged?: boolean;
  allowPrivilegeEscalation?: boolean;
  runAsNonRoot?: boolean;
  runAsUser?: number;
  capabilities?: { add?: string[]; drop?: string[] };
  seccompProfile?: { type: string };
  appArmorProfile?: { type: string };
  seLinuxOptions?: { type?: string; user?: string; role?: string };
  procMount?: string;
  windowsOptions?: { hostProcess?: boolean };
};
type Container = {
  name: string;
  securityContext?: SecurityContext;
  ports?: { hostPort?: number }[];
};
export type PodSpec = {
  hostNetwork?: boolean;
  hostPID?: boolean;
  hostIPC?: boolean;
  securityContext?: SecurityContext & { sysctls?: { name: string }[] };
  containers: Container[];
  initContainers?: Container[];
  ephemeralContainers?: Container[];
  volumes?: Record<string, unknown>[];
};

export interface Finding {
  level: Exclude<Level, 'privileged'>;
  control: string;
  where: string;
}

/** Baseline, "Capabilities": anything added beyond this list is refused. */
const BASELINE_CAPABILITIES = new Set([
  'AUDIT_WRITE',
  'CHOWN',
  'DAC_OVERRIDE',
  'FOWNER',
  'FSETID',
  'KILL',
  'MKNOD',
  'NET_BIND_SERVICE',
  'SETFCAP',
  'SETGID',
  'SETPCAP',
  'SETUID',
  'SYS_CHROOT',
]);
/** Baseline, "Sysctls": the safe set. */
const SAFE_SYSCTLS = new Set([
  'kernel.shm_rmid_forced',
  'net.ipv4.ip_local_port_range',
  'net.ipv4.ip_unprivileged_port_start',
  'net.ipv4.tcp_syncookies',
  'net.ipv4.ping_group_range',
  'net.ipv4.ip_local_reserved_ports',
  'net.ipv4.tcp_keepalive_time',
  'net.ipv4.tcp_fin_timeout',
  'net.ipv4.tcp_keepalive_intvl',
  'net.ipv4.tcp_keepalive_probes',
]);
/** Baseline, "SELinux": the allowed types. */
const SELINUX_TYPES = new Set(['', 'container_t', 'container_init_t', 'container_kvm_t', 'container_engine_t']);
/** Restricted, "Volume Types": the only volume sources allowed. */
const RESTRICTED_VOLUMES = new Set([
  'configMap',
  'csi',
  'downwardAPI',
  'emptyDir',
  'ephemeral',
  'persistentVolumeClaim',
  'projected',
  'secret',
]);

/** Every finding of the baseline and restricted controls for one pod spec. */
export function check(pod: PodSpec): Finding[] {
  const out: Finding[] = [];
  const base = (control: string, where: string) => out.push({ level: 'baseline', control, where });
  const restricted = (control: string, where: string) => out.push({ level: 'restricted', control, where });
  const containers = [
    ...pod.containers.map((c) => ['containers', c] as const),
    ...(pod.initContainers ?? []).map((c) => ['initContainers', c] as const),
    ...(pod.ephemeralContainers ?? []).map((c) => ['ephemeralContainers', c] as const),
  ];
  const podSc = pod.securityContext ?? {};

  // Baseline.
  for (const ns of ['hostNetwork', 'hostPID', 'hostIPC'] as const) if (pod[ns]) base('Host Namespaces', `spec.${ns}`);
  if (podSc.windowsOptions?.hostProcess) base('HostProcess', 'spec.securityContext.windowsOptions.hostProcess');
  for (const v of pod.volumes ?? []) if ('hostPath' in v) base('HostPath Volumes', `spec.volumes[${String(v.name)}]`);
  for (const s of podSc.sysctls ?? [])
    if (!SAFE_SYSCTLS.has(s.name)) base('Sysctls', `spec.securityContext.sysctls[${s.name}]`);
  const seccompOf = (sc?: SecurityContext) => sc?.seccompProfile?.type;
  if (seccompOf(podSc) === 'Unconfined') base('Seccomp', 'spec.securityContext.seccompProfile');
  if (podSc.appArmorProfile?.type === 'Unconfined') base('AppArmor', 'spec.securityContext.appArmorProfile');
  const seLinux = (sc: SecurityContext | undefined, where: string) => {
    const o = sc?.seLinuxOptions;
    if (o && (!SELINUX_TYPES.has(o.type ?? '') || o.user || o.role)) base('SELinux', `${where}.seLinuxOptions`);
  };
  seLinux(podSc, 'spec.securityContext');
  for (const [kind, c] of containers) {
    const where = `spec.${kind}[${c.name}]`;
    const sc = c.securityContext;
    if (sc?.privileged) base('Privileged Containers', `${where}.securityContext.privileged`);
    if (sc?.windowsOptions?.hostProcess) base('HostProcess', `${where}.securityContext.windowsOptions.hostProcess`);
    for (const cap of sc?.capabilities?.add ?? [])
      if (!BASELINE_CAPABILITIES.has(cap)) base('Capabilities', `${where}.securityContext.capabilities.add[${cap}]`);
    for (const p of c.ports ?? []) if (p.hostPort) base('Host Ports', `${where}.ports.hostPort`);
    if (sc?.procMount && sc.procMount !== 'Default') base('/proc Mount Type', `${where}.securityContext.procMount`);
    if (seccompOf(sc) === 'Unconfined') base('Seccomp', `${where}.securityContext.seccompProfile`);
    if (sc?.appArmorProfile?.type === 'Unconfined') base('AppArmor', `${where}.securityContext.appArmorProfile`);
    seLinux(sc, `${where}.securityContext`);
  }

  // Restricted (on top of baseline).
  for (const v of pod.volumes ?? []) {
    const source = Object.keys(v).find((k) => k !== 'name');
    if (!source || !RESTRICTED_VOLUMES.has(source)) restricted('Volume Types', `spec.volumes[${String(v.name)}]`);
  }
  for (const [kind, c] of containers) {
    const where = `spec.${kind}[${c.name}]`;
    const sc = c.securityContext ?? {};
    if (sc.allowPrivilegeEscalation !== false)
      restricted('Privilege Escalation', `${where}.securityContext.allowPrivilegeEscalation`);
    if (!(sc.runAsNonRoot ?? podSc.runAsNonRoot)) restricted('Running as Non-root', `${where}.securityContext`);
    if ((sc.runAsUser ?? podSc.runAsUser) === 0)
      restricted('Running as Non-root user', `${where}.securityContext.runAsUser`);
    const seccomp = seccompOf(sc) ?? seccompOf(podSc);
    if (seccomp !== 'RuntimeDefault' && seccomp !== 'Localhost') restricted('Seccomp', `${where}.seccompProfile`);
    if (!(sc.capabilities?.drop ?? []).includes('ALL'))
      restricted('Capabilities', `${where}.securityContext.capabilities.drop`);
    for (const cap of sc.capabilities?.add ?? [])
      if (cap !== 'NET_BIND_SERVICE') restricted('Capabilities', `${where}.securityContext.capabilities.add[${cap}]`);
  }
  return out;
}

/** The lowest level whose controls a pod meets. */
export function lowestLevel(findings: Finding[]): Level {
  if (findings.some((f) => f.level === 'baseline')) return 'privileged';
  if (findings.some((f) => f.level === 'restricted')) return 'baseline';
  return 'restricted';
}

/**
 * What the API server's own validation refuses before admission runs (kubernetes
 * pkg/apis/core/validation ValidateSecurityContext): privileged, or adding CAP_SYS_ADMIN, with
 * allowPrivilegeEscalation false.
 */
export function invalid(pod: PodSpec): string[] {
  return [...pod.containers, ...(pod.initContainers ?? [])].flatMap((c) => {
    const sc = c.securityContext;
    if (sc?.allowPrivilegeEscalation !== false) return [];
    return [
      ...(sc.privileged ? [`${c.name}: privileged with allowPrivilegeEscalation false`] : []),
      ...((sc.capabilities?.add ?? []).includes('CAP_SYS_ADMIN')
        ? [`${c.name}: CAP_SYS_ADMIN with allowPrivilegeEscalation false`]
        : []),
    ];
  });
}
