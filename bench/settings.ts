/** A benchmark knob from the environment: a positive whole number (of `unit`), or the default when unset. */
export function positiveIntegerSetting(name: string, fallback: number, unit: string): number {
  const text = process.env[name];
  if (text === undefined || text === '') return fallback;
  if (!/^[1-9]\d*$/.test(text)) {
    console.error(`${name} must be a positive whole number of ${unit}, got "${text}"`);
    process.exit(2);
  }
  return Number(text);
}
