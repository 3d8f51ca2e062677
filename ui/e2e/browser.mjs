// How this repository's scripts launch Chromium through playwright-core: the system browser
// (CHROMIUM or /usr/bin/chromium; `npx playwright install` downloads are not used), headless,
// with a throwaway profile (playwright's launch() makes a fresh one) and nothing that phones home.
export function launchOptions() {
  return {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  };
}
