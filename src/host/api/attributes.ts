// What a kubelet API request asks to do, in authorisation terms, exactly as the kubelet's auth filter maps it
// (pkg/kubelet/server/auth.go, Kubernetes 1.36 with KubeletFineGrainedAuthz): resource "nodes", the node's
// name, the verb from the HTTP method, and the subresource(s) from the path. The request is allowed when
// any of the subresources is (so /pods is allowed by nodes/pods, or by nodes/proxy as before).

export interface RequestAttributes {
  verb: string;
  subresources: string[];
}

/** The Kubernetes verb of an HTTP method; "" (never allowed) for others, as the kubelet does. */
export function verbOf(method: string | undefined): string {
  switch ((method ?? '').toUpperCase()) {
    case 'POST': return 'create';
    case 'GET': return 'get';
    case 'PUT': return 'update';
    case 'PATCH': return 'patch';
    case 'DELETE': return 'delete';
    default: return '';
  }
}

/** `subpath` is `path` or below it. */
export function isSubpath(subpath: string, path: string): boolean {
  const p = path.endsWith('/') ? path.slice(0, -1) : path;
  return subpath === p || (subpath.startsWith(p) && subpath[p.length] === '/');
}

export function requestAttributes(method: string | undefined, path: string): RequestAttributes {
  const subresources: string[] = [];
  if (isSubpath(path, '/pods')) subresources.push('pods');
  else if (isSubpath(path, '/healthz')) subresources.push('healthz');
  else if (isSubpath(path, '/configz')) subresources.push('configz');
  else if (isSubpath(path, '/runningpods/')) subresources.push('pods');

  if (isSubpath(path, '/stats/')) subresources.push('stats');
  else if (isSubpath(path, '/metrics')) subresources.push('metrics');
  else if (isSubpath(path, '/logs/')) subresources.push('log');
  else if (isSubpath(path, '/checkpoint')) subresources.push('checkpoint');
  else if (isSubpath(path, '/statusz')) subresources.push('statusz');
  else if (isSubpath(path, '/flagz')) subresources.push('configz');
  else subresources.push('proxy');
  return { verb: verbOf(method), subresources };
}
