/**
 * One saver service for the whole run (tests that kill a service start their
 * own): started before the first test file, stopped after the last.
 */

import type { TestProject } from "vitest/node";

import { ServiceProcess } from "./service.js";

declare module "vitest" {
  export interface ProvidedContext {
    saverUrl: string;
  }
}

export default async function setup(project: TestProject) {
  const service = new ServiceProcess();
  project.provide("saverUrl", await service.start());
  return async () => {
    await service.dispose();
  };
}
