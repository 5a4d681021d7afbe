import { serveJobs } from '../../../platform/off-loop-thread.ts';
import { planCalls, type CallPlan, type PlanRequest } from './call-plan.ts';

/**
 * The autopilot's thread (autopilot-model.ts starts it through OffLoopJobs): planning reads the
 * request's schemas and its message, and json-schema-faker's work grows with a schema's
 * demands, none of which the server's loop should wait on.
 */
serveJobs<PlanRequest, CallPlan>(planCalls);
