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

/** A benchmark knob from the environment that holds words separated by spaces (Node options, NAME=value settings); undefined when unset. */
export function wordsSetting(name: string): string[] | undefined {
  return process.env[name]?.split(' ').filter((word) => word !== '');
}
