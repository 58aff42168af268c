/** kube-apiserver's audit log, as far as the simulator keeps one (Cluster.audit). */
export interface AuditRecord {
  user: string;
  verb: string;
  resource: string;
  subresource?: string;
  namespace?: string;
  name?: string;
}
export const AUDIT_KEPT = 20_000;
