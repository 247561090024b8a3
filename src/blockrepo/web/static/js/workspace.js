// Where this tab works: main (null) or a planning scenario, remembered per tab (sessionStorage) so that a
// reload stays in it and another tab can work in main or another scenario meanwhile.

const STORAGE_KEY = "blockrepo.scenario";

function storage() {
  try {
    return globalThis.sessionStorage || null;
  } catch {
    return null; // storage refused (private mode, sandbox): the scenario lasts as long as the page
  }
}

let remembered = null;

// The scenario the tab is in ({key, name, ...} as the API describes it), or null for main.
export function currentScenario() {
  const store = storage();
  if (!store) return remembered;
  try {
    return JSON.parse(store.getItem(STORAGE_KEY) || "null");
  } catch {
    return null;
  }
}

export function scenarioKey() {
  return currentScenario()?.key || null;
}

export function enterScenario(scenario) {
  const kept = {
    key: scenario.key,
    name: scenario.name,
    baseRevision: scenario.baseRevision,
    behindMain: scenario.behindMain,
    state: scenario.state,
  };
  remembered = kept;
  storage()?.setItem(STORAGE_KEY, JSON.stringify(kept));
}

export function leaveScenario() {
  remembered = null;
  storage()?.removeItem(STORAGE_KEY);
}
