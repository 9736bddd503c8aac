-- Argo CD health of a ScavengeSchedule (argocd-cm resource.customizations.health.eventdb.io_ScavengeSchedule):
-- Suspended when spec.suspend; Degraded when Stalled or the last cycle failed; Progressing while
-- its cluster is missing (Reconciling); Healthy otherwise, a running cycle included.
hs = {}
if obj.spec ~= nil and obj.spec.suspend == true then
  hs.status = "Suspended"
  hs.message = "spec.suspend is true"
  return hs
end
hs.status = "Healthy"
hs.message = (obj.status ~= nil and obj.status.state) or "Waiting"
if obj.status == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator"
  return hs
end
if obj.status.conditions == nil then
  return hs
end
for _, c in ipairs(obj.status.conditions) do
  if c.type == "Stalled" and c.status == "True" then
    hs.status = "Degraded"
    hs.message = c.message
    return hs
  end
end
for _, c in ipairs(obj.status.conditions) do
  if c.type == "Reconciling" and c.status == "True" then
    hs.status = "Progressing"
    hs.message = c.message
    return hs
  end
end
for _, c in ipairs(obj.status.conditions) do
  if c.type == "Ready" and c.status == "False" then
    hs.status = "Degraded"
    hs.message = c.message
  end
end
return hs
