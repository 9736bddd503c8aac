-- Argo CD health of an EventDBCluster (argocd-cm resource.customizations.health.eventdb.io_EventDBCluster)
hs = {}
if obj.metadata.deletionTimestamp ~= nil then
  hs.status = "Progressing"
  hs.message = "Being deleted"
  return hs
end
if obj.spec ~= nil and obj.spec.paused == true then
  hs.status = "Suspended"
  hs.message = "spec.paused is true"
  return hs
end
if obj.spec ~= nil and obj.spec.hibernation == true and obj.status ~= nil and obj.status.phase == "Hibernated" then
  hs.status = "Suspended"
  hs.message = "spec.hibernation is true: every node is stopped, PVCs and Secrets kept"
  return hs
end
if obj.status == nil or obj.status.conditions == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator"
  return hs
end
-- Stalled=True (kstatus): the operator cannot go on without a change of the spec or a Secret
for _, c in ipairs(obj.status.conditions) do
  if c.type == "Stalled" and c.status == "True" then
    hs.status = "Degraded"
    hs.message = c.message
    return hs
  end
end
for _, c in ipairs(obj.status.conditions) do
  if c.type == "Ready" then
    if c.observedGeneration ~= nil and obj.metadata.generation ~= nil and c.observedGeneration < obj.metadata.generation then
      hs.status = "Progressing"
      hs.message = "Waiting for the operator to see the latest spec"
      return hs
    end
    if c.status == "True" then
      hs.status = "Healthy"
    elseif c.reason == "InvalidSpec" or c.reason == "ClusteringUnsupported" or c.reason == "SecretMissing" then
      hs.status = "Degraded"
    elseif obj.status.phase == "Degraded" or obj.status.phase == "Failed" then
      hs.status = "Degraded"
    else
      hs.status = "Progressing"
    end
    hs.message = c.message
    return hs
  end
end
hs.status = "Progressing"
hs.message = "Waiting for the Ready condition"
return hs
