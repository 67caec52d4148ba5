-- Argo CD health of a kafkaplacement.io resource (KafkaCluster, BrokerDecommission, LogDirCordon,
-- PlacementPolicy): the operator's phase and its kstatus conditions (docs/gitops.md).
local hs = {status = "Progressing", message = "waiting for the operator"}
local st = obj.status
if st == nil then
  return hs
end
local generation = obj.metadata.generation
if st.observedGeneration == nil or (generation ~= nil and st.observedGeneration < generation) then
  hs.message = "the operator has not reconciled this spec yet"
  return hs
end
local conditions = {}
for _, c in ipairs(st.conditions or {}) do
  conditions[c.type] = c
end
local function says(c)
  if c ~= nil and c.message ~= nil and c.message ~= "" then
    return c.message
  end
  return st.message or st.phase or ""
end
if conditions.Stalled ~= nil and conditions.Stalled.status == "True" then
  hs.status = "Degraded"
  hs.message = says(conditions.Stalled)
elseif st.phase == "AwaitingApproval" or st.phase == "Paused" then
  hs.status = "Suspended"
  hs.message = says(conditions.Blocked)
elseif conditions.Reconciling ~= nil and conditions.Reconciling.status == "True" then
  hs.message = says(conditions.Reconciling)
elseif st.phase == "Completed" or st.phase == "Connected" then
  hs.status = "Healthy"
  hs.message = says(conditions.Ready)
end
return hs
