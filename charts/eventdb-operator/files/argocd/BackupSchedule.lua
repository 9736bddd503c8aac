-- Argo CD health of a BackupSchedule (argocd-cm resource.customizations.health.eventdb.io_BackupSchedule):
-- Suspended when spec.suspend; Degraded when Stalled (an invalid spec) or its newest backup failed;
-- Progressing while the operator has not seen the spec or the cluster is missing; Healthy otherwise.
hs = {}
if obj.spec ~= nil and obj.spec.suspend == true then
  hs.status = "Suspended"
  hs.message = "spec.suspend is true"
  return hs
end
if obj.status == nil or obj.status.conditions == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator"
  return hs
end
local ready = nil
for _, c in ipairs(obj.status.conditions) do
  if c.type == "Stalled" and c.status == "True" then
    hs.status = "Degraded"
    hs.message = c.message
    return hs
  end
  if c.type == "Ready" then ready = c end
end
for _, c in ipairs(obj.status.conditions) do
  if c.type == "Reconciling" and c.status == "True" then
    hs.status = "Progressing"
    hs.message = c.message
    return hs
  end
end
if ready == nil or (ready.observedGeneration ~= nil and obj.metadata.generation ~= nil and ready.observedGeneration < obj.metadata.generation) then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to see the latest spec"
  return hs
end
if ready.status == "True" then
  hs.status = "Healthy"
else
  hs.status = "Degraded"
end
hs.message = ready.message
return hs
