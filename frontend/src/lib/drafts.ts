/** Text the user typed that the server did not take, given back to the field it came
 * from: ahead of whatever was typed there since, so neither is lost. */
export function giveBack(lost: string, now: string, separator = "\n"): string {
  return now.trim() ? `${lost}${separator}${now}` : lost;
}
