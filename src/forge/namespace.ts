// The namespace mapping: which member namespace holds a host namespace's delegates and copies (a template, and
// overrides per host namespace), and whether that name can exist. Pure; config.ts checks the mapping a user writes.

export interface NamespaceMapping {
  /** Member namespace for a host namespace; `{namespace}` is replaced by the host namespace. */
  template: string;
  overrides: Record<string, string>;
}

/** A DNS-1123 label: what a namespace name (and many others) must be. */
export const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
export const NAME_MAX = 63;
export const DNS_LABEL_RULE = 'lowercase letters, digits and "-", starting and ending with a letter or digit';

/** The member namespace for a host namespace. */
export function memberNamespace(mapping: NamespaceMapping, hostNamespace: string): string {
  // hasOwn: a namespace named "constructor" is not Object.prototype's.
  return Object.hasOwn(mapping.overrides, hostNamespace) ? mapping.overrides[hostNamespace]
    : mapping.template.replaceAll('{namespace}', hostNamespace);
}

export type MemberNamespaceCheck =
  | { namespace: string; error?: undefined }
  | { namespace: string; error: string; reason: 'NamespaceTooLong' | 'InvalidNamespace' };

/**
 * The member namespace for a host namespace, or why it cannot exist (too long, not a DNS-1123 label): the error
 * names the host namespace, the mapping that produced the name and the rule, and what to change.
 */
export function checkMemberNamespace(mapping: NamespaceMapping, hostNamespace: string): MemberNamespaceCheck {
  const namespace = memberNamespace(mapping, hostNamespace);
  if (DNS_LABEL.test(namespace)) return { namespace };
  const via = Object.hasOwn(mapping.overrides, hostNamespace)
    ? `override "${hostNamespace}": "${namespace}"` : `template "${mapping.template}"`;
  const tooLong = namespace.length > NAME_MAX;
  const problem = tooLong ? `${namespace.length} characters: a namespace name is at most ${NAME_MAX}`
    : `not a DNS-1123 label (${DNS_LABEL_RULE})`;
  return {
    namespace,
    reason: tooLong ? 'NamespaceTooLong' : 'InvalidNamespace',
    error: `host namespace "${hostNamespace}" maps to member namespace "${namespace}" (${via}), ${problem}; `
      + 'give it another name with a namespaceMapping override (or change the template) and restart clusterlet',
  };
}
