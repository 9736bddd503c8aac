-- Argo CD health of a Backup (argocd-cm resource.customizations.health.eventdb.io_Backup):
-- Completed is Healthy, Failed (Stalled=True) Degraded, Pending and Running Progressing.
hs = {}
local status = obj.status
local phase = status ~= nil and status.phase or nil
local ready = nil
local stalled = nil
if status ~= nil and status.conditions ~= nil then
  for _, c in ipairs(status.conditions) do
    if c.type == "Ready" then ready = c end
    if c.type == "Stalled" and c.status == "True" then stalled = c end
  end
end
if phase == "Failed" or stalled ~= nil then
  hs.status = "Degraded"
elseif phase == "Completed" or (ready ~= nil and ready.status == "True") then
  hs.status = "Healthy"
else
  hs.status = "Progressing"
end
hs.message = (status ~= nil and status.message) or (ready ~= nil and ready.message) or (phase or "Pending")
return hs
