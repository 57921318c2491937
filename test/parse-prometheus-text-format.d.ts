// parse-prometheus-text-format ships no types; the telemetry tests use its one function.
declare module 'parse-prometheus-text-format' {
  const parse: (text: string) => Array<{ name: string; help: string; type: string; metrics: Array<Record<string, any>> }>;
  export default parse;
}
