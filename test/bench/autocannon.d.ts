// autocannon ships no types; the benches use a small part of its API.
declare module 'autocannon' {
  const autocannon: (opts: Record<string, unknown>) => Promise<any>;
  export default autocannon;
}
