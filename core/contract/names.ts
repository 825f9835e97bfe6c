/**
 * The names Kubernetes accepts, as apimachinery validates them (`k8s.io/apimachinery/pkg/util/validation`:
 * `IsDNS1123Label`, `IsDNS1123Subdomain`, with its error messages), and the controller name Levelset
 * accepts. The one definition of these rules: the key message, the controllers' specs and
 * configuration, the command line and the scaffold all use it.
 */
import * as z from 'zod';

/** Longest DNS-1123 label (`validation.DNS1123LabelMaxLength`): namespace names, label-like names. */
export const DNS1123_LABEL_MAX_LENGTH = 63;
/** Longest DNS-1123 subdomain (`validation.DNS1123SubdomainMaxLength`): most object names. */
export const DNS1123_SUBDOMAIN_MAX_LENGTH = 253;

const LABEL = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const DNS1123_LABEL = new RegExp(`^${LABEL}$`);
const DNS1123_SUBDOMAIN = new RegExp(`^${LABEL}(\\.${LABEL})*$`);

/** apimachinery's `dns1123LabelErrMsg`. */
export const DNS1123_LABEL_MESSAGE =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
/** apimachinery's `dns1123SubdomainErrorMsg`. */
export const DNS1123_SUBDOMAIN_MESSAGE =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";

/** True when `s` is a DNS-1123 label (`IsDNS1123Label`): a namespace name, ≤ 63 characters. */
export function isDNS1123Label(s: string): boolean {
  return s.length <= DNS1123_LABEL_MAX_LENGTH && DNS1123_LABEL.test(s);
}

/** True when `s` is a DNS-1123 subdomain (`IsDNS1123Subdomain`): a Secret, Deployment or custom object name, ≤ 253 characters. */
export function isDNS1123Subdomain(s: string): boolean {
  return s.length <= DNS1123_SUBDOMAIN_MAX_LENGTH && DNS1123_SUBDOMAIN.test(s);
}

/** A zod schema of a DNS-1123 label (a namespace name), with apimachinery's messages. */
export const dns1123Label = z
  .string()
  .min(1, 'must not be empty')
  .max(DNS1123_LABEL_MAX_LENGTH, `must be no more than ${DNS1123_LABEL_MAX_LENGTH} characters`)
  .regex(DNS1123_LABEL, DNS1123_LABEL_MESSAGE);

/** A zod schema of a DNS-1123 subdomain (most object names), with apimachinery's messages. */
export const dns1123Subdomain = z
  .string()
  .min(1, 'must not be empty')
  .max(DNS1123_SUBDOMAIN_MAX_LENGTH, `must be no more than ${DNS1123_SUBDOMAIN_MAX_LENGTH} characters`)
  .regex(DNS1123_SUBDOMAIN, DNS1123_SUBDOMAIN_MESSAGE);

/**
 * A controller's name as the registry and the key message accept it: kebab-case (lowercase words of
 * letters and digits joined by '-', starting with a letter), e.g. `secret-replicator`.
 */
export const controllerName = z
  .string()
  .regex(/^[a-z][a-z0-9]*(-[a-z0-9]+)*$/, 'must be kebab-case (e.g. "secret-replicator")');

/**
 * A cluster's id, as the key message, the cluster registry, the relay's configuration and
 * `--cluster` accept it: a DNS-1123 label (≤ 63 characters; a GKE cluster's name is one, ≤ 40), e.g.
 * `gke-eu`. `default` names the cluster of a single-cluster deployment (`DEFAULT_CLUSTER`, key.ts).
 */
export const clusterId = dns1123Label;
